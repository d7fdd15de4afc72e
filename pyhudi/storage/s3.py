"""S3-compatible object stores: where the settings come from, the file system, conditional create.

**Settings.** A table at ``s3://bucket/path`` (``s3a://`` is accepted too, as Spark writes it)
is reached through ``pyarrow.fs.S3FileSystem``. The endpoint, region and credentials come from
the ``hoodie.pyhudi.s3.*`` options given to ``create_table``/``open_table`` (never persisted in
``hoodie.properties``) and otherwise from the usual environment variables: ``AWS_ENDPOINT_URL_S3``
or ``AWS_ENDPOINT_URL``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``; credentials the options do not
give are found by the AWS SDK's default chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
``AWS_SESSION_TOKEN``, profiles, instance roles). Options given for a table's base URI are
remembered for that URI in this process, because the write path re-opens storage by URI.

**Conditional create.** The timeline needs write-once files (completed instants, the lock file,
log files). ``pyarrow.fs`` has no conditional put, so pyhudi issues ``PutObject`` with
``If-None-Match: *`` through boto3: the store creates the object only if the key is absent and
answers ``412 Precondition Failed`` otherwise, atomically. Not every S3-compatible store honours
the header (some ignore it and overwrite), so by default (``hoodie.pyhudi.s3.conditional.put=auto``)
pyhudi probes once per endpoint and bucket: it puts a probe object twice and uses conditional
puts only if the second put is refused. Without them the store has no atomic create, and
completion is made atomic by the lock provider instead (:mod:`pyhudi.timeline.lock_provider`).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Mapping

from pyhudi.errors import AlreadyExistsError, ConfigError, StorageError
from pyhudi.value import Value
from pyhudi.config.storage import S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY, S3_SESSION_TOKEN, S3_CONDITIONAL_PUT  # noqa: F401 (declared there)

if TYPE_CHECKING:
    import pyarrow.fs as pafs

S3_SCHEMES = ("s3", "s3a")


#: Every storage option; they configure access and are never written to hoodie.properties.
STORAGE_OPTION_KEYS = tuple(k.key for k in (S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY,
                                            S3_SESSION_TOKEN, S3_CONDITIONAL_PUT))

_REMEMBERED: dict[str, dict[str, str]] = {}
_REMEMBERED_GUARD = threading.Lock()


def is_s3_uri(uri: str) -> bool:
    return uri.split("://", 1)[0].lower() in S3_SCHEMES if "://" in uri else False


def split_storage_options(options: Mapping[str, Any] | None) -> tuple[dict[str, str], dict[str, Any]]:
    """``(storage options, everything else)``: storage options must not reach hoodie.properties."""
    storage, rest = {}, {}
    for key, value in (options or {}).items():
        if key in STORAGE_OPTION_KEYS:
            storage[key] = str(value)
        else:
            rest[key] = value
    return storage, rest


def remember_options(base_uri: str, options: Mapping[str, str]) -> None:
    """Keep the storage options of a table for every later ``Storage(base_uri)`` in this process."""
    with _REMEMBERED_GUARD:
        _REMEMBERED[base_uri.rstrip("/")] = dict(options)


def remembered_options(base_uri: str) -> dict[str, str]:
    with _REMEMBERED_GUARD:
        return dict(_REMEMBERED.get(base_uri.rstrip("/"), {}))


class S3Settings(Value):
    """How to reach one S3-compatible store (hashable: file systems and clients are cached by it)."""

    endpoint: str | None
    region: str | None
    access_key: str | None
    secret_key: str | None
    session_token: str | None
    conditional_put: str

    def __init__(self, endpoint: str | None, region: str | None, access_key: str | None, secret_key: str | None,
                 session_token: str | None, conditional_put: str) -> None:
        self._set(endpoint=endpoint, region=region, access_key=access_key, secret_key=secret_key,
                  session_token=session_token, conditional_put=conditional_put)

    @classmethod
    def resolve(cls, options: Mapping[str, str] | None = None, env: Mapping[str, str] | None = None) -> S3Settings:
        """Options first, then the environment (``env`` defaults to ``os.environ``)."""
        opts = options or {}
        env = os.environ if env is None else env
        endpoint = S3_ENDPOINT.get(opts) or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None
        region = S3_REGION.get(opts) or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None
        access_key, secret_key = S3_ACCESS_KEY.get(opts), S3_SECRET_KEY.get(opts)
        if (access_key is None) != (secret_key is None):
            raise ConfigError(f"{S3_ACCESS_KEY.key} and {S3_SECRET_KEY.key} must be given together")
        if endpoint is not None and "://" not in endpoint:
            raise ConfigError(f"S3 endpoint {endpoint!r} must be a URL with a scheme, e.g. http://host:9000")
        return cls(
            endpoint=endpoint.rstrip("/") if endpoint else None,
            region=region or ("us-east-1" if endpoint else None),
            access_key=access_key,
            secret_key=secret_key,
            session_token=S3_SESSION_TOKEN.get(opts),
            conditional_put=S3_CONDITIONAL_PUT.get(opts),
        )

    def __repr__(self) -> str:  # never print secrets
        shown = {name: getattr(self, name) for name in self._value_fields if name not in ("secret_key", "session_token")}
        return f"S3Settings({shown})"

    def filesystem(self) -> pafs.S3FileSystem:
        return _filesystem(self)

    def conditional_creator(self, bucket: str) -> ConditionalPut | None:
        """The conditional-put writer for ``bucket``, or None if the store has no conditional put."""
        return _conditional_creator(self, bucket)


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` → ``("bucket", "bucket/a/b")`` (the pyarrow path keeps the bucket)."""
    path = uri.split("://", 1)[1].split("?", 1)[0].strip("/")
    if not path:
        raise ConfigError(f"S3 URI {uri!r} names no bucket")
    return path.split("/", 1)[0], path


@lru_cache(maxsize=32)
def _filesystem(settings: S3Settings) -> pafs.S3FileSystem:
    import pyarrow.fs as pafs  # (S3 only: a local read imports less, issue 15)

    kwargs: dict[str, Any] = {}
    if settings.endpoint:
        kwargs["endpoint_override"] = settings.endpoint
        kwargs["scheme"] = settings.endpoint.split("://", 1)[0]
    if settings.region:
        kwargs["region"] = settings.region
    if settings.access_key is not None:
        kwargs.update(access_key=settings.access_key, secret_key=settings.secret_key)
        if settings.session_token:
            kwargs["session_token"] = settings.session_token
    return pafs.S3FileSystem(**kwargs)


class ConditionalPut:
    """``PutObject`` with ``If-None-Match: *`` through boto3 (thread-safe: one shared client)."""

    #: 409 ConditionalRequestConflict means a concurrent conditional write to the key is in flight;
    #: S3 asks the client to retry (the retry then sees 412 if the other write won).
    _CONFLICT_RETRIES = 8

    def __init__(self, client: Any, bucket: str) -> None:
        self.client = client
        self.bucket = bucket

    def create(self, key: str, data: bytes) -> None:
        """Create ``key`` with ``data`` unless it exists (:class:`AlreadyExistsError`)."""
        from botocore.exceptions import BotoCoreError, ClientError

        for attempt in range(self._CONFLICT_RETRIES + 1):
            try:
                self.client.put_object(Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*")
                return
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code", "")
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                if code == "PreconditionFailed" or status == 412:
                    raise AlreadyExistsError(f"file already exists: {self.bucket}/{key}") from None
                if (code == "ConditionalRequestConflict" or status == 409) and attempt < self._CONFLICT_RETRIES:
                    time.sleep(0.005 * (2 ** attempt))
                    continue
                raise StorageError(f"cannot create {self.bucket}/{key}: {code or status}: {exc}") from exc
            except BotoCoreError as exc:
                raise StorageError(f"cannot create {self.bucket}/{key}: {exc}") from exc

    def supported(self) -> bool:
        """Whether the store refuses a second conditional put of one key (it honours the header).

        Only a definite answer counts: the second put succeeding (the header was ignored) or a
        4xx/501 refusal of the header means no. A connection failure or a server error raises
        :class:`StorageError` instead, so a transient fault never silently downgrades atomicity
        (the answer is cached for the process)."""
        from botocore.exceptions import BotoCoreError, ClientError

        key = f".pyhudi-conditional-put-probe-{uuid.uuid4().hex}"
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=b"1", IfNoneMatch="*")
            self.client.put_object(Bucket=self.bucket, Key=key, Body=b"2", IfNoneMatch="*")
            return False  # the header was ignored: the second put overwrote the probe
        except ClientError as exc:
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
            if exc.response.get("Error", {}).get("Code") == "PreconditionFailed" or status == 412:
                return True
            if status >= 500 and status != 501:
                raise StorageError(f"cannot probe conditional put on bucket {self.bucket}: {exc}") from exc
            return False  # e.g. 400/501: the store does not implement the header
        except BotoCoreError as exc:
            raise StorageError(f"cannot probe conditional put on bucket {self.bucket}: {exc}") from exc
        finally:
            try:
                self.client.delete_object(Bucket=self.bucket, Key=key)
            except (ClientError, BotoCoreError):
                pass


def _boto3_client(settings: S3Settings) -> Any:
    import boto3
    from botocore.config import Config

    kwargs: dict[str, Any] = {"config": Config(retries={"max_attempts": 3, "mode": "standard"})}
    if settings.endpoint:
        kwargs["endpoint_url"] = settings.endpoint
    if settings.region:
        kwargs["region_name"] = settings.region
    if settings.access_key is not None:
        kwargs.update(aws_access_key_id=settings.access_key, aws_secret_access_key=settings.secret_key,
                      aws_session_token=settings.session_token)
    return boto3.session.Session().client("s3", **kwargs)


@lru_cache(maxsize=64)
def _conditional_creator(settings: S3Settings, bucket: str) -> ConditionalPut | None:
    """Decided once per store and bucket in a process (cached, including a negative answer)."""
    if settings.conditional_put == "false":
        return None
    try:
        client = _boto3_client(settings)
    except ImportError:
        if settings.conditional_put == "true":
            raise ConfigError(f"{S3_CONDITIONAL_PUT.key}=true needs boto3 (pip install boto3)") from None
        return None
    creator = ConditionalPut(client, bucket)
    if settings.conditional_put == "true" or creator.supported():
        return creator
    return None


__all__ = [
    "S3Settings",
    "ConditionalPut",
    "S3_ENDPOINT",
    "S3_REGION",
    "S3_ACCESS_KEY",
    "S3_SECRET_KEY",
    "S3_SESSION_TOKEN",
    "S3_CONDITIONAL_PUT",
    "STORAGE_OPTION_KEYS",
    "is_s3_uri",
    "split_s3_uri",
    "split_storage_options",
    "remember_options",
    "remembered_options",
]
