"""Bearer tokens for the API and the ``pkb submit`` client: ``Authorization: Bearer pkb_<prefix>_<secret>``."""

from __future__ import annotations

import re

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions

from leaderboard.accounts import services as accounts_services
from leaderboard.accounts import throttle

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
        # An address that sent too many refused tokens is held back before any lookup (tokens are 256-bit secrets,
        # but a stolen prefix or a leaked list should not be checkable at the rate a script can send). Only refused
        # tokens count here: the log-in form's lock-out is never consulted, so a valid token is not held back by
        # wrong passwords someone else sent from the same address (tests/site/security/test_lockout_proxy.py).
        ip = throttle.client_ip(request._request)
        limit = throttle.token_limit()
        until = throttle.retry_at(limit, ip)
        if until is not None:
            wait = max(1, int((until - timezone.now()).total_seconds()) + 1)
            raise exceptions.Throttled(
                wait=wait,
                detail=f"Too many refused tokens from your address. Try again after {until:%Y-%m-%d %H:%M:%S} UTC.",
            )
        # The shape accounts_services.token_create makes; anything else (a NUL byte, which PostgreSQL refuses in a
        # query, a megabyte of text) is refused before the lookup.
        token = accounts_services.token_authenticate(parts[1]) if TOKEN_SHAPE.fullmatch(parts[1]) else None
        if token is None:
            throttle.record(limit, ip)
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
