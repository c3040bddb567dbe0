"""Password hashing with argon2 (argon2-cffi's PasswordHasher, its default parameters: RFC 9106's low-memory
profile, 64 MiB and 3 passes), and the rules for user names and passwords.

``GAVEL_PASSWORD_HASH_PROFILE`` names another of argon2-cffi's parameter profiles (``argon2.profiles``): the test suite
sets ``CHEAPEST``, so that its hundreds of logins do not each spend a fraction of a second on purpose. A hash
keeps its own parameters, so a password hashed under one profile is verified under any other.

A user name is 1-80 letters, digits and ``. _ @ + -`` (what the ``users.username`` column holds on every
database; NUL bytes and control characters never reach the database). A password has at least
``MIN_PASSWORD_CHARS`` characters, at most ``MAX_PASSWORD_CHARS``, no NUL byte, and is not the user name.
"""

from __future__ import annotations

import functools
import re

from argon2 import Parameters, PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

from gavel.core import config

MAX_USERNAME_CHARS = 80  # users.username is String(80)
MIN_PASSWORD_CHARS = 10
MAX_PASSWORD_CHARS = 1024
_USERNAME = re.compile(rf"[\w.@+-]{{1,{MAX_USERNAME_CHARS}}}")

PROFILE_ENV = "GAVEL_PASSWORD_HASH_PROFILE"
DEFAULT_PROFILE = "RFC_9106_LOW_MEMORY"  # what PasswordHasher() uses when given nothing
PROFILES = tuple(sorted(n for n in dir(profiles) if isinstance(getattr(profiles, n), Parameters)))


@functools.cache
def _hashers(name: str) -> tuple[PasswordHasher, str]:
    if name not in PROFILES:
        raise ValueError(f"{PROFILE_ENV}: one of argon2-cffi's profiles ({', '.join(PROFILES)}), not {name!r}")
    hasher = PasswordHasher.from_parameters(getattr(profiles, name))
    # compared against when the user does not exist, so a wrong name costs as long as a wrong password
    return hasher, hasher.hash("not a password")


def hasher() -> tuple[PasswordHasher, str]:
    """The password hasher of ``GAVEL_PASSWORD_HASH_PROFILE`` (default DEFAULT_PROFILE) and its hash of a dummy
    password; ValueError naming the setting when it names no profile."""
    return _hashers((config.env(PROFILE_ENV) or DEFAULT_PROFILE).strip())


def hash_password(password: str) -> str:
    return hasher()[0].hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    chosen, dummy = hasher()
    try:
        return chosen.verify(password_hash or dummy, password) and password_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def valid_username(username) -> bool:
    return isinstance(username, str) and _USERNAME.fullmatch(username) is not None and username.isprintable()


def check_username(username) -> None:
    """ValueError saying what is wrong with ``username``, if anything."""
    if not valid_username(username):
        raise ValueError(f"a user name is 1-{MAX_USERNAME_CHARS} letters, digits and . _ @ + - "
                         f"(got {str(username)[:100]!r})")


def check_password(password, username: str = "") -> None:
    """ValueError saying why ``password`` is refused, if it is (the password itself is never shown)."""
    if not isinstance(password, str) or len(password) < MIN_PASSWORD_CHARS:
        raise ValueError(f"a password needs at least {MIN_PASSWORD_CHARS} characters")
    if len(password) > MAX_PASSWORD_CHARS:
        raise ValueError(f"a password has at most {MAX_PASSWORD_CHARS} characters")
    if "\x00" in password:
        raise ValueError("a password cannot hold a NUL character")
    if username and password.casefold() == username.casefold():
        raise ValueError("a password cannot be the user name")
