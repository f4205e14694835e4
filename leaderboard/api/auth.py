"""Bearer tokens for the API and the ``pkb submit`` client: ``Authorization: Bearer pkb_<prefix>_<secret>``."""
from __future__ import annotations

import re

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from leaderboard.accounts import services as accounts_services

TOKEN_SHAPE = re.compile(r"pkb_[A-Za-z0-9]{1,32}_[A-Za-z0-9_-]{1,128}")


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0] not in (self.keyword, "Token"):
            return None
        # The shape accounts_services.token_create makes; anything else (a NUL byte, which PostgreSQL refuses in a query,
        # a megabyte of text) is refused before the lookup.
        if not TOKEN_SHAPE.fullmatch(parts[1]):
            raise exceptions.AuthenticationFailed("invalid, expired or revoked token")
        token = accounts_services.token_authenticate(parts[1])
        if token is None:
            raise exceptions.AuthenticationFailed("invalid, expired or revoked token")
        return token.submitter.user, token

    def authenticate_header(self, request):
        return self.keyword


class TokenScheme(OpenApiAuthenticationExtension):
    target_class = "leaderboard.api.auth.ApiTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "pkb_<prefix>_<secret>"}


def scoped(scope: str):
    """Permission: authenticated, and if through a token, the token carries ``scope`` (sessions carry all)."""

    class HasScope(permissions.BasePermission):
        message = f"this needs a token with the {scope!r} scope"

        def has_permission(self, request, view):
            if not (request.user and request.user.is_authenticated):
                return False
            token = request.auth
            return not hasattr(token, "has_scope") or token.has_scope(scope)

    HasScope.__name__ = f"HasScope_{scope}"
    return HasScope
