"""Password hashing with argon2 (argon2-cffi's PasswordHasher, its default parameters), and the rules for user
names and passwords.

A user name is 1-80 letters, digits and ``. _ @ + -`` (what the ``users.username`` column holds on every
database; NUL bytes and control characters never reach the database). A password has at least
``MIN_PASSWORD_CHARS`` characters, at most ``MAX_PASSWORD_CHARS``, no NUL byte, and is not the user name.
"""

from __future__ import annotations

import re

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

MAX_USERNAME_CHARS = 80  # users.username is String(80)
MIN_PASSWORD_CHARS = 10
MAX_PASSWORD_CHARS = 1024
_USERNAME = re.compile(rf"[\w.@+-]{{1,{MAX_USERNAME_CHARS}}}")

_hasher = PasswordHasher()
# compared against when the user does not exist, so a wrong name costs as long as a wrong password
_DUMMY = _hasher.hash("not a password")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    try:
        return _hasher.verify(password_hash or _DUMMY, password) and password_hash is not None
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
