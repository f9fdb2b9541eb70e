//! The DuckDB statements that open a downloaded catalog read-only over the lake's data where it
//! lives: the extensions the store needs, a secret that says how to reach it (never a
//! credential's value: DuckDB finds those as the cloud's own tools do), and the `ATTACH`.

use std::fmt::Write as _;
use std::path::Path;

use crate::store::access::{DataAccess, S3Access};

/// The statements, one a line, ready to paste into DuckDB with the DuckLake extension.
///
/// `OVERRIDE_DATA_PATH` is always given: a catalog stores the data path its writer used (a
/// folder on the writer's machine, or a relative path), which is rarely where a reader finds
/// the lake, and DuckLake refuses a `DATA_PATH` that differs from it without the override.
pub(crate) fn attach_statements(catalog: &Path, data_path: &str, access: &DataAccess) -> String {
    let abs = std::path::absolute(catalog).unwrap_or_else(|_| catalog.to_path_buf());
    let mut extensions = vec!["ducklake"];
    match access {
        DataAccess::Folder => {}
        DataAccess::Http => extensions.push("httpfs"),
        // DuckDB's credential chain for GCS comes with the aws extension.
        DataAccess::Gcs { .. } => extensions.extend(["httpfs", "aws"]),
        DataAccess::S3(s3) => {
            extensions.push("httpfs");
            if !s3.unsigned {
                extensions.push("aws");
            }
        }
        DataAccess::Azure { .. } => extensions.push("azure"),
    }
    let mut out = String::new();
    for e in &extensions {
        let _ = writeln!(out, "INSTALL {e};");
    }
    for e in &extensions {
        let _ = writeln!(out, "LOAD {e};");
    }
    if let Some(secret) = secret(access, data_path) {
        out.push_str(&secret);
    }
    let _ = writeln!(
        out,
        "ATTACH 'ducklake:{}' AS lake (READ_ONLY, DATA_PATH '{}', OVERRIDE_DATA_PATH true);",
        quote(&abs.display().to_string()),
        quote(data_path)
    );
    out
}

/// SQL's string quoting: a `'` is doubled.
fn quote(s: &str) -> String {
    s.replace('\'', "''")
}

/// The `CREATE SECRET` for a cloud store, scoped to the lake's data.
fn secret(access: &DataAccess, data_path: &str) -> Option<String> {
    let scope = format!("SCOPE '{}'", quote(data_path));
    match access {
        DataAccess::Folder | DataAccess::Http => None,
        DataAccess::S3(s3) => Some(s3_secret(s3, &scope)),
        DataAccess::Gcs { endpoint } => {
            let mut params = vec!["TYPE gcs".to_string(), "PROVIDER credential_chain".into()];
            if let Some(e) = endpoint {
                params.push(format!("ENDPOINT '{}'", quote(e)));
            }
            params.push(scope);
            Some(create_secret(&params))
        }
        DataAccess::Azure {
            account,
            connection_string_variable,
        } => {
            let mut params = vec!["TYPE azure".to_string()];
            match connection_string_variable {
                // DuckDB's CLI reads a variable with getenv(); the value is never printed.
                Some(var) => params.push(format!("CONNECTION_STRING getenv('{var}')")),
                None => {
                    params.push("PROVIDER credential_chain".into());
                    if let Some(a) = account {
                        params.push(format!("ACCOUNT_NAME '{}'", quote(a)));
                    }
                }
            }
            params.push(scope);
            Some(create_secret(&params))
        }
    }
}

fn s3_secret(s3: &S3Access, scope: &str) -> String {
    let mut params = vec!["TYPE s3".to_string()];
    if s3.unsigned {
        params.push("PROVIDER config".into());
    } else {
        params.push("PROVIDER credential_chain".into());
        if let Some(p) = &s3.profile {
            params.push(format!("PROFILE '{}'", quote(p)));
        }
    }
    params.push(format!("REGION '{}'", quote(&s3.region)));
    if let Some(e) = &s3.endpoint {
        params.push(format!("ENDPOINT '{}'", quote(e)));
        let style = if s3.path_style { "path" } else { "vhost" };
        params.push(format!("URL_STYLE '{style}'"));
        params.push(format!("USE_SSL {}", s3.use_ssl));
    }
    params.push(scope.to_string());
    create_secret(&params)
}

fn create_secret(params: &[String]) -> String {
    format!(
        "CREATE OR REPLACE SECRET fdl_lake ({});\n",
        params.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_lake_needs_only_ducklake_and_the_override() {
        let got = attach_statements(
            Path::new("/tmp/v1.duckdb"),
            "/srv/lake/data/",
            &DataAccess::Folder,
        );
        assert_eq!(
            got,
            "INSTALL ducklake;\nLOAD ducklake;\nATTACH 'ducklake:/tmp/v1.duckdb' AS lake \
             (READ_ONLY, DATA_PATH '/srv/lake/data/', OVERRIDE_DATA_PATH true);\n"
        );
    }

    #[test]
    fn an_s3_lake_on_an_emulator_gets_its_endpoint_region_and_style_but_no_key() {
        let s3 = S3Access {
            bucket: "datasets".into(),
            endpoint: Some("127.0.0.1:9000".into()),
            use_ssl: false,
            path_style: true,
            region: "eu-west-3".into(),
            profile: Some("o'brien".into()),
            unsigned: false,
        };
        let got = attach_statements(
            Path::new("/tmp/v1.duckdb"),
            "s3://datasets/sales/data/",
            &DataAccess::S3(s3),
        );
        assert!(
            got.starts_with("INSTALL ducklake;\nINSTALL httpfs;\nINSTALL aws;\n"),
            "{got}"
        );
        assert!(
            got.contains(
                "CREATE OR REPLACE SECRET fdl_lake (TYPE s3, PROVIDER credential_chain, \
                 PROFILE 'o''brien', REGION 'eu-west-3', ENDPOINT '127.0.0.1:9000', \
                 URL_STYLE 'path', USE_SSL false, SCOPE 's3://datasets/sales/data/');\n"
            ),
            "{got}"
        );
    }
}
