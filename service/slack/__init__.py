"""The Slack channel (slack_bolt AsyncApp at `POST /slack/events`); see service/slack/channel.py."""

from __future__ import annotations

from service.slack.channel import SlackChannel
from service.slack.route import router

__all__ = ["SlackChannel", "router"]
