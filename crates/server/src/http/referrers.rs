//! `GET /v2/<name>/referrers/<digest>?artifactType=`: an image index of the manifests whose
//! subject is `<digest>` (empty when there are none), filtered by artifact type when asked,
//! which `OCI-Filters-Applied` then says.

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};

use super::routes::Target;
use super::{ApiError, FILTERS_APPLIED};
use chartreg_core::content::Registry;
use chartreg_core::oci::layout::{Annotations, Descriptor};
use chartreg_core::oci::{Digest, media_type};

#[derive(Deserialize)]
struct Query {
    #[serde(rename = "artifactType")]
    artifact_type: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReferrersIndex<'a> {
    schema_version: u32,
    media_type: &'static str,
    manifests: Vec<&'a Descriptor>,
    #[serde(skip_serializing_if = "Annotations::is_empty")]
    annotations: Annotations,
}

pub(super) fn get(
    req: &HttpRequest,
    registry: &Registry,
    target: &Target,
    subject: &Digest,
) -> Result<HttpResponse, ApiError> {
    let query: Query =
        serde_urlencoded::from_str(req.query_string()).map_err(ApiError::ReferrersQuery)?;
    let artifact_type = query.artifact_type.filter(|t| !t.is_empty());
    let repository = registry.resolve(&target.name, target.namespace.as_ref())?;
    let index = ReferrersIndex {
        schema_version: 2,
        media_type: media_type::OCI_INDEX,
        manifests: repository
            .referrers(subject, artifact_type.as_deref())
            .collect(),
        annotations: Annotations::new(),
    };
    let data = serde_json::to_vec(&index).map_err(ApiError::ReferrersIndex)?;
    let mut response = HttpResponse::Ok();
    response.insert_header((
        header::CONTENT_TYPE,
        HeaderValue::from_static(media_type::OCI_INDEX),
    ));
    if artifact_type.is_some() {
        response.insert_header((FILTERS_APPLIED, HeaderValue::from_static("artifactType")));
    }
    Ok(response.body(data))
}
