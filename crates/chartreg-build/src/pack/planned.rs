//! A run's plan, made before anything is written: the inputs read and laid out, signatures
//! checked, who owns what in the output folder (this run's repositories, the chart
//! repositories it no longer has inputs for, imported repositories merged or restored), the
//! images the charts need, and the bookkeeping files as they will be (`chart-images.json`,
//! `verification.json`, `origins.json`, `.gitignore`, the record). `pack` writes it; `check`
//! compares it.

use std::collections::BTreeSet;
use std::path::Path;

use chartreg_core::content::{
    CHART_IMAGES_FILE, ChartImagesFile, ORIGINS_FILE, OriginsFile, VERIFICATION_FILE,
    VerificationFile,
};
use chartreg_core::tree::Tree;

use super::*;

/// A run's plan: what to write and remove, and the record afterwards.
pub(super) struct Plan {
    pub(super) packed: Packed,
    pub(super) removals: Vec<String>,
    /// Merged repositories pack no longer has charts for: their imported part alone.
    pub(super) restores: Vec<(String, Tree)>,
    pub(super) record: Record,
    /// The images each chart version needs, as the output folder keeps them (`images_file`).
    pub(super) chart_images: Option<ChartImagesFile>,
    /// What verified, with the policy: this run's (with the content file's `verify:`) and
    /// earlier runs' of the repositories it leaves in place (`verify::merged`).
    pub(super) verification: Option<VerificationFile>,
    /// Where the charts packed from the lock were downloaded from, with earlier runs' of the
    /// chart repositories other prefixes pack (`origins_file`).
    pub(super) origins: Option<OriginsFile>,
}

/// Reads, lays out and checks the inputs of `request`, and decides what the output folder
/// will hold; writes nothing (a refusal here leaves the folder as it was).
pub(super) fn plan(request: &Request) -> Result<Plan, PackError> {
    let inputs = read_inputs(request)?;
    let mut packed = build(&inputs, &request.prefix, &request.out)?;
    let verification = match &request.verify {
        Some(policy) => Some(verify::inputs(
            policy,
            &request.prefix,
            &inputs,
            &mut packed,
        )?),
        None => None,
    };
    let out = &request.out;
    let previous = Record::load(out, &request.prefix)
        .map_err(|e| at(&out.join(RECORD_FILE))(Problem::Record(e)))?;
    let mut record = previous.clone();
    // Chart repositories of this prefix are this run's to keep or remove, when it has charts.
    let mut removals = Vec::new();
    let mut restores = Vec::new();
    let imported_error = |name: &str| {
        let path = out.join(name);
        move |e: imported::Error| at(&path)(Problem::Imported(e))
    };
    if !request.charts.is_empty() {
        for (name, owner) in &previous.repositories {
            let ours = matches!(owner, Owner::Chart { prefix } if *prefix == request.prefix);
            if ours && !packed.repositories.contains_key(name) {
                record.repositories.remove(name);
                match previous.imported.get(name) {
                    Some(imported) => restores.push((
                        name.clone(),
                        imported::imported_tree(out, name, imported)
                            .map_err(imported_error(name))?,
                    )),
                    None => removals.push(name.clone()),
                }
            }
        }
    }
    for (name, (owner, tree)) in packed.repositories.iter_mut() {
        let known =
            previous.repositories.contains_key(name) || previous.imported.contains_key(name);
        if !known && out.join(name.as_str()).exists() {
            return Err(at(&out.join(name.as_str()))(Problem::NotOwned(
                name.clone(),
            )));
        }
        if let Some(imported) = previous.imported.get(name) {
            let source = packed.sources.get(name).cloned().unwrap_or_default();
            if matches!(owner, Owner::Layout { .. }) {
                return Err(at(&source)(Problem::ImportedLayout {
                    name: name.clone(),
                    bundles: imported.bundles.clone(),
                }));
            }
            *tree = imported::merge(std::mem::take(tree), out, name, imported, &source)
                .map_err(imported_error(name))?;
        }
        record.repositories.insert(name.clone(), owner.clone());
    }
    let charts: Vec<&ChartPackage> = inputs
        .iter()
        .filter_map(|input| match input {
            Input::Chart(chart) => Some(&**chart),
            Input::Layout(_) => None,
        })
        .collect();
    let made = match &request.images {
        Some(check) => Some(chart_images(
            check,
            &request.prefix,
            &charts,
            &mut packed,
            &restores,
            &record,
            out,
        )?),
        None => None,
    };
    let listed_error = |e| at(&out.join(CHART_IMAGES_FILE))(Problem::ChartImages(Box::new(e)));
    let previous_list = images_file::load(out).map_err(listed_error)?;
    // Entries of chart repositories other runs pack (another prefix), while they exist.
    let other_prefix = |name: &str| {
        matches!(record.repositories.get(name), Some(Owner::Chart { .. }))
            && !matches!(
                packed.repositories.get(name),
                Some((Owner::Chart { .. }, _))
            )
    };
    let chart_images = images_file::merged(previous_list, made, other_prefix);
    let (made, warnings) = origins_file::of(&charts, &request.prefix, &request.downloaded);
    packed.warnings.extend(warnings);
    let previous_origins = origins_file::load(out)
        .map_err(|e| at(&out.join(ORIGINS_FILE))(Problem::Origins(Box::new(e))))?;
    let origins = origins_file::merged(previous_origins, made, other_prefix);
    // The bookkeeping files' names are never a repository's, whether or not this run writes
    // them: a later run would, or would remove the folder's file.
    let named =
        |file: &str| record.repositories.contains_key(file) || record.imported.contains_key(file);
    if named(CHART_IMAGES_FILE) {
        return Err(at(&out.join(CHART_IMAGES_FILE))(Problem::ChartImagesName));
    }
    if named(VERIFICATION_FILE) {
        return Err(at(&out.join(VERIFICATION_FILE))(Problem::VerificationName));
    }
    if named(ORIGINS_FILE) {
        return Err(at(&out.join(ORIGINS_FILE))(Problem::OriginsName));
    }
    // Records of repositories an earlier run packed and this one leaves in place.
    let verification = verify::merged(out, verify::load(out)?, verification, |name| {
        record.repositories.contains_key(name) && !packed.repositories.contains_key(name)
    })?;
    // A repository's folder is replaced as a whole: none may lie inside another.
    let names: Vec<&String> = record.repositories.keys().collect();
    for outer in &names {
        if let Some(inner) = names.iter().find(|inner| {
            inner
                .strip_prefix(outer.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        }) {
            return Err(at(&out.join(inner.as_str()))(Problem::Nested {
                inner: (*inner).clone(),
                outer: (*outer).clone(),
            }));
        }
    }
    Ok(Plan {
        packed,
        removals,
        restores,
        record,
        chart_images,
        verification,
        origins,
    })
}

/// The images `charts` need (see `closure`), as `images_file` lists them; with
/// `images.closure`, checked to be held by the content: `require` refuses, naming each
/// missing image and the charts that need it; `warn` adds a warning for each.
fn chart_images(
    check: &closure::ImagesCheck,
    prefix: &str,
    charts: &[&ChartPackage],
    packed: &mut Packed,
    restores: &[(String, Tree)],
    record: &Record,
    out: &Path,
) -> Result<ChartImagesFile, PackError> {
    let closure_error = |e| at(&check.config)(Problem::Closure(Box::new(e)));
    let closure = closure::find(check, charts).map_err(closure_error)?;
    packed.warnings.extend(closure.warnings.iter().cloned());
    let listed = images_file::of(&closure, charts, prefix)
        .map_err(|e| at(&check.config)(Problem::ChartImages(Box::new(e))))?;
    let Some(mode) = check.mode else {
        return Ok(listed);
    };
    let kept: BTreeSet<String> = record
        .repositories
        .keys()
        .chain(record.imported.keys())
        .cloned()
        .collect();
    let trees = packed
        .repositories
        .iter()
        .map(|(name, (_, tree))| (name, tree))
        .chain(restores.iter().map(|(name, tree)| (name, tree)));
    let missing = closure::missing(&closure, trees, &kept, out).map_err(closure_error)?;
    if missing.is_empty() {
        return Ok(listed);
    }
    match mode {
        crate::content_file::ClosureCheck::Require => {
            Err(at(&check.config)(Problem::MissingImages(missing)))
        }
        crate::content_file::ClosureCheck::Warn => {
            packed
                .warnings
                .extend(missing.iter().map(|m| format!("images.closure: {m}")));
            Ok(listed)
        }
    }
}

/// A file `pack` keeps beside the repositories, and its bytes (`None`: the file is not kept).
type Kept = (&'static str, Option<Vec<u8>>);

/// The small files `pack` keeps beside the repositories: the images the chart versions need,
/// what verified, where the charts came from, the `.gitignore`, and the record last (written
/// last, it says what the rest is).
pub(super) fn bookkeeping(plan: &Plan) -> Result<Vec<Kept>, RecordError> {
    let mut kept = vec![(
        CHART_IMAGES_FILE,
        plan.chart_images.as_ref().map(ChartImagesFile::to_bytes),
    )];
    kept.push((
        VERIFICATION_FILE,
        plan.verification.as_ref().map(VerificationFile::to_bytes),
    ));
    kept.push((
        ORIGINS_FILE,
        plan.origins.as_ref().map(OriginsFile::to_bytes),
    ));
    kept.push((GITIGNORE_FILE, plan.record.gitignore()));
    kept.push((RECORD_FILE, Some(plan.record.to_bytes()?)));
    Ok(kept)
}
