"""Settings from the environment (pydantic-settings). The only configuration object.

LLM: set OPENAI_API_KEY and/or OPENAI_BASE_URL (any OpenAI-compatible endpoint: OpenAI,
DeepSeek, Qwen/DashScope, vLLM, Ollama) to switch from the offline agent to the LLM agent.
Everything else uses the VRAMWISE_ prefix.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VRAMWISE_", extra="ignore", populate_by_name=True)

    # LLM endpoint (OpenAI-compatible). No key and no base URL -> offline agent.
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("VRAMWISE_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("VRAMWISE_OPENAI_BASE_URL", "OPENAI_BASE_URL")
    )
    llm_model: str = Field(
        default="gpt-4o-mini", validation_alias=AliasChoices("VRAMWISE_LLM_MODEL", "OPENAI_MODEL")
    )
    llm_timeout_s: float = 60.0
    llm_temperature: float = 0.0
    agent: str = "auto"  # auto (llm when configured), offline, llm

    # Storage: embedded SQLite by default; any SQLAlchemy async URL (postgresql+asyncpg://...)
    database_url: str = Field(
        default="sqlite+aiosqlite:///./vramwise.sqlite3",
        validation_alias=AliasChoices("VRAMWISE_DATABASE_URL", "DATABASE_URL"),
    )

    # HTTP
    host: str = "127.0.0.1"
    port: int = 8000
    max_message_chars: int = 32000  # pasted configs and logs fit (well within max_body_bytes)
    # offline agent worker processes (CPU-bound work off the serving loop); None = one per CPU core,
    # 0 = answer on a background thread of the serving process instead
    agent_processes: int | None = Field(default=None, ge=0, le=64)
    # CORS stays off unless origins are listed: a JSON list or comma-separated
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Operating a shared instance (service/api/operating.py): comma-separated API keys (Bearer; unset =
    # open), a rate limit per key or client address ("60/minute"), concurrent chat requests per client
    # (unset = no cap), the largest request body accepted (413 beyond it).
    api_keys: str | None = None
    rate_limit: str | None = None
    max_streams_per_client: int | None = Field(default=None, ge=1)
    max_body_bytes: int = Field(default=1 << 20, ge=1024)
    # Connections (service/serving.py, uvicorn's own settings): reverse proxies whose X-Forwarded-For and
    # X-Forwarded-Proto are believed (comma-separated addresses or networks, "*" = any; unset = none), the
    # largest request head, the time a client has to send its request head and body, idle keep-alive,
    # and open connections at once (503 and a warning beyond it).
    trusted_proxies: str | None = None
    max_header_bytes: int = Field(default=64 << 10, ge=1024, le=16 << 20)
    request_read_s: float = Field(default=20.0, gt=0, le=3600)
    keep_alive_s: int = Field(default=5, ge=1, le=3600)
    max_connections: int = Field(default=2048, ge=1)
    max_turns: int = Field(default=500, ge=1)  # questions one conversation keeps; one more: 409

    @field_validator("cors_origins", mode="before")
    @classmethod
    def _origins_listed(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        accepted = 'accepted: a JSON list (["https://a.example"]) or comma-separated origins'
        if value.strip().startswith("["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not a JSON list ({exc.msg}); {accepted}") from None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"not a list of strings; {accepted}")
            return value
        return [origin.strip() for origin in value.split(",") if origin.strip()]

    @field_validator("api_keys")
    @classmethod
    def _some_key_if_set(cls, value: str | None) -> str | None:
        if value is not None and value and not any(k.strip() for k in value.split(",")):
            raise ValueError(
                "holds no key (only commas or spaces); accepted: comma-separated keys, or unset for an open service"
            )
        return value

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit_understood(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from service.api.ratelimit import parse_rate  # only when one is set

        parse_rate(value)  # ValueError: says what is accepted
        return value

    # Slack (service/slack): both set -> POST /slack/events answers; unset -> 404
    slack_bot_token: str | None = Field(
        default=None, validation_alias=AliasChoices("VRAMWISE_SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN")
    )
    slack_signing_secret: str | None = Field(
        default=None, validation_alias=AliasChoices("VRAMWISE_SLACK_SIGNING_SECRET", "SLACK_SIGNING_SECRET")
    )
    slack_api_url: str | None = None  # base URL of the Slack Web API; tests point this at a fake one

    # What an operator sees (service/observability): GET /metrics (false: no such route) and its own bearer
    # token, JSON log lines, question text in the access lines (off: never logged), OTLP traces
    metrics: bool = True
    metrics_token: str | None = None
    log_format: Literal["text", "json"] = "text"
    log_questions: bool = False
    otel_exporter_otlp_endpoint: str | None = Field(
        default=None, validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT")
    )

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_api_key or self.openai_base_url)
