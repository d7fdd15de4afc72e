"""Object storage settings (S3-compatible stores), declared once; never persisted in hoodie.properties."""

from __future__ import annotations

from pyhudi.config.keys import ConfigKey

S3_ENDPOINT = ConfigKey(
    "hoodie.pyhudi.s3.endpoint", str, None,
    "Endpoint URL of an S3-compatible store (e.g. http://127.0.0.1:9000); default: AWS_ENDPOINT_URL_S3, "
    "then AWS_ENDPOINT_URL, then AWS itself.",
)

S3_REGION = ConfigKey(
    "hoodie.pyhudi.s3.region", str, None,
    "Region of the bucket; default: AWS_REGION, then AWS_DEFAULT_REGION (us-east-1 with a custom endpoint).",
)

S3_ACCESS_KEY = ConfigKey(
    "hoodie.pyhudi.s3.access.key", str, None,
    "Access key id; default: the AWS SDK's credential chain (AWS_ACCESS_KEY_ID, profiles, roles).",
)

S3_SECRET_KEY = ConfigKey("hoodie.pyhudi.s3.secret.key", str, None, "Secret access key (with the access key).")

S3_SESSION_TOKEN = ConfigKey("hoodie.pyhudi.s3.session.token", str, None, "Session token of temporary credentials.")

S3_CONDITIONAL_PUT = ConfigKey(
    "hoodie.pyhudi.s3.conditional.put", str, "auto",
    "Create write-once files with PutObject If-None-Match: * (needs boto3). auto = probe the store once; "
    "true = use without probing; false = never (the lock provider alone keeps completion atomic).",
    choices=("auto", "true", "false"),
)
