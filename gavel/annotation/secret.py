"""The session signing key of the annotation app: from the environment or a private file, never the database.

``GAVEL_ANNOTATION_SECRET_KEY`` (at least 32 characters) wins; otherwise the key file
(``--secret-key-file``, else ``GAVEL_ANNOTATION_SECRET_KEY_FILE``, else ``data/interim/annotation/secret_key``)
is read, or made on first use with mode 0600 in a folder made 0700. A key file that others can read is refused
with the command that fixes it. The key is never printed or logged.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from gavel.core import config

ENV_KEY = "GAVEL_ANNOTATION_SECRET_KEY"
ENV_FILE = "GAVEL_ANNOTATION_SECRET_KEY_FILE"
MIN_KEY_CHARS = 32


def default_key_file() -> Path:
    return config.INTERIM_DIR / "annotation" / "secret_key"


def key_file(given: str | os.PathLike | None = None) -> Path:
    return Path(given or config.env(ENV_FILE) or default_key_file())


def load_secret_key(path: str | os.PathLike | None = None) -> str:
    """The signing key (see the module's doc); ValueError or PermissionError naming the variable or file."""
    value = config.env(ENV_KEY)
    if value:
        if len(value) < MIN_KEY_CHARS:
            raise ValueError(f"{ENV_KEY} holds a key of {len(value)} characters; at least {MIN_KEY_CHARS} "
                             f"are needed (e.g. python -c 'import secrets; print(secrets.token_hex(32))')")
        return value
    path = key_file(path)
    if not path.exists():
        if not path.parent.exists():
            path.parent.mkdir(parents=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first
            pass
        else:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_hex(32) + "\n")
    mode = path.stat().st_mode
    if mode & 0o077:
        raise PermissionError(f"the session key file {path} can be read by others (mode {mode & 0o777:o}): "
                              f"chmod 600 {path}")
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < MIN_KEY_CHARS:
        raise ValueError(f"the session key file {path} holds {len(key)} characters; at least {MIN_KEY_CHARS} "
                         f"are needed (delete it to have a new one made)")
    return key
