//! Images: every repository the lists ask for ([`fetch_all`]), repositories in parallel, each
//! copied whole into its layout (`repository`), and what the lock records of each image.

pub(super) mod repository;

use std::collections::BTreeMap;

use futures_util::StreamExt;

use super::failed::Entry;
use super::lists::{self, ImageSource};
use super::options::{Fetched, Lists, Options};
use super::problem::Problem;
use super::{oci, progress};
use crate::lock::{Lock, LockedImage};
use crate::pin::Pin;

use repository::{Asked, Checking, Pinned, copy_repository};

/// Images: a repository at a time (its layout is one folder), repositories in parallel
/// (`pinned`: the lock, with `--locked`).
pub(super) async fn fetch_all(
    options: &Options,
    lists: Lists<'_>,
    image_sources: &[ImageSource],
    pinned: Option<&Lock>,
    progress: &progress::Progress,
) -> Fetched<LockedImage> {
    let mut fetched = Fetched::default();
    let mut by_repository: BTreeMap<(String, String), Vec<Pin>> = BTreeMap::new();
    for image in image_sources {
        by_repository
            .entry((image.registry.clone(), image.repository.clone()))
            .or_default()
            .push(image.pin.clone());
    }
    let locked_images = pinned.map(|l| &l.images);
    let results: Vec<Vec<(String, Result<LockedImage, Problem>)>> =
        futures_util::stream::iter(by_repository.iter())
            .map(|((registry_host, repository), pins)| {
                let task = progress.task(&format!("{registry_host}/{repository}"));
                let images_file = lists.images_file;
                async move {
                    let key_of = |pin: &Pin| format!("{registry_host}/{repository}{pin}");
                    let registry = match oci::Registry::for_host(
                        registry_host,
                        &options.transport,
                        images_file,
                    ) {
                        Ok(registry) => registry,
                        Err(problem) => {
                            task.finish(&Err::<(), _>(problem.clone()));
                            return pins
                                .iter()
                                .map(|pin| (key_of(pin), Err(problem.clone())))
                                .collect::<Vec<_>>();
                        }
                    };
                    // Locked, where the lock put it; else under --images-out.
                    let dir = pins
                        .iter()
                        .find_map(|pin| locked_images?.get(&key_of(pin)))
                        .map_or_else(
                            || lists::layout_dir(&options.images_out(), registry_host, repository),
                            |l| crate::lock::resolved(&options.lock(), &l.layout),
                        );
                    let pinned: BTreeMap<Pin, Pinned> = pins
                        .iter()
                        .filter_map(|pin| {
                            let locked = locked_images?.get(&key_of(pin))?;
                            let pinned = Pinned {
                                digest: locked.digest.clone(),
                                referrers: locked.referrers.clone(),
                            };
                            Some((pin.clone(), pinned))
                        })
                        .collect();
                    let verify = options.verify.as_deref().map(|verifier| Checking {
                        verifier,
                        served: crate::lock::served_repository(registry_host, repository)
                            .unwrap_or_else(|| format!("{registry_host}/{repository}")),
                        locked: locked_images.map(|l| {
                            pins.iter()
                                .filter_map(|pin| {
                                    let verified = l.get(&key_of(pin))?.verified.clone();
                                    Some((pin.served().as_str().to_owned(), verified))
                                })
                                .collect()
                        }),
                    });
                    let asked = Asked {
                        pins,
                        platforms: &options.platforms,
                        with_referrers: options.referrers,
                        pinned: &pinned,
                        verify,
                    };
                    let copied = copy_repository(&registry, repository, &dir, &asked).await;
                    let layout = options.recorded(&dir);
                    let out: Vec<(String, Result<LockedImage, Problem>)> = match copied {
                        Ok(copied) => pins
                            .iter()
                            .map(|pin| {
                                let key = key_of(pin);
                                let result = match copied.get(pin) {
                                    Some(c) => Ok(LockedImage {
                                        digest: c.digest.clone(),
                                        platforms: c.platforms.clone(),
                                        referrers: c.referrers.clone(),
                                        layout: layout.clone(),
                                        charts: Vec::new(),
                                        upstream: c.upstream.clone(),
                                        verified: c.verified.clone(),
                                    }),
                                    None => Err(Problem::NotFound),
                                };
                                (key, result)
                            })
                            .collect(),
                        Err(failed) => failed
                            .into_iter()
                            .map(|(pin, problem)| {
                                // None: the repository's layout, for every pin together.
                                let key = pin.as_ref().map_or_else(
                                    || {
                                        let all: Vec<String> =
                                            pins.iter().map(ToString::to_string).collect();
                                        format!("{registry_host}/{repository} ({})", all.join(", "))
                                    },
                                    key_of,
                                );
                                (key, Err(problem))
                            })
                            .collect(),
                    };
                    let first_failure = out.iter().find_map(|(_, r)| r.as_ref().err().cloned());
                    task.finish(&first_failure.map_or(Ok(()), Err));
                    out
                }
            })
            .buffer_unordered(options.parallel.max(1))
            .collect()
            .await;
    for (key, result) in results.into_iter().flatten() {
        fetched.record(key, result, Entry::Image);
    }
    fetched
}
