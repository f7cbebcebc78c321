"""`POST /slack/events`: every Slack request (Events API, the /vram command, button actions).

Slack on (both VRAMWISE_SLACK_SIGNING_SECRET and VRAMWISE_SLACK_BOT_TOKEN set): handed to the channel's
bolt app, which verifies the signature first. Slack off: 404 with a one-line reason.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from service.api.errors import ApiError, error_response

router = APIRouter(tags=["slack"])

NOT_CONFIGURED = (
    "Slack is not configured: set VRAMWISE_SLACK_SIGNING_SECRET and VRAMWISE_SLACK_BOT_TOKEN "
    "(README, 'Slack') and restart"
)


@router.post(
    "/slack/events",
    summary="Slack: Events API, the /vram slash command and interactivity (signed requests only)",
    responses={
        400: {"description": "a signed body of a shape Slack does not send (service/slack/gate.py)"},
        401: {"description": "bad or missing Slack signature"},
        404: {"description": NOT_CONFIGURED},
        409: {"description": "a signed request already answered (a replay)"},
    },
)
async def slack_events(request: Request) -> Response:
    channel = getattr(request.app.state, "slack", None)
    if channel is None:
        err = ApiError(404, NOT_CONFIGURED, accepted="nothing until Slack is configured", code="slack_off")
        return error_response(request, err)
    return await channel.handle(request)
