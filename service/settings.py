"""Settings from the environment (pydantic-settings). The only configuration object.

LLM: set OPENAI_API_KEY and/or OPENAI_BASE_URL (any OpenAI-compatible endpoint: OpenAI,
DeepSeek, Qwen/DashScope, vLLM, Ollama) to switch from the offline agent to the LLM agent.
Everything else uses the VRAMWISE_ prefix.
"""

from __future__ import annotations

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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
    max_message_chars: int = 4000
    # offline agent worker processes (CPU-bound work off the serving loop); None = one per CPU core,
    # 0 = answer on a background thread of the serving process instead
    agent_processes: int | None = Field(default=None, ge=0, le=64)
    cors_origins: list[str] = Field(default_factory=list)

    # Slack (service/slack): both set -> POST /slack/events answers; unset -> 404
    slack_bot_token: str | None = Field(
        default=None, validation_alias=AliasChoices("VRAMWISE_SLACK_BOT_TOKEN", "SLACK_BOT_TOKEN")
    )
    slack_signing_secret: str | None = Field(
        default=None, validation_alias=AliasChoices("VRAMWISE_SLACK_SIGNING_SECRET", "SLACK_SIGNING_SECRET")
    )
    slack_api_url: str | None = None  # base URL of the Slack Web API; tests point this at a fake one

    @property
    def llm_configured(self) -> bool:
        return bool(self.openai_api_key or self.openai_base_url)
