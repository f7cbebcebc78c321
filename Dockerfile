# VRAMwise service image: `docker build -t vramwise .` then `docker run -p 8000:8000 vramwise`.
# Embedded defaults (SQLite in /data, offline agent); docker-compose.yml adds PostgreSQL and an LLM.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Project metadata and its build hook first, then the packages it ships (tools, service, prompts); the postgres extra
# brings asyncpg for VRAMWISE_DATABASE_URL=postgresql+asyncpg://..., the otel extra the OTLP trace exporter
# (used only when OTEL_EXPORTER_OTLP_ENDPOINT is set)
COPY pyproject.toml README.md build_hooks.py ./
COPY tools ./tools
COPY service ./service
COPY prompts ./prompts
RUN pip install ".[postgres,otel]"

# Non-root user; the SQLite file (the default store) lives in a volume-friendly /data.
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin vramwise \
    && mkdir -p /data \
    && chown vramwise:vramwise /data
USER vramwise
WORKDIR /data

ENV VRAMWISE_DATABASE_URL=sqlite+aiosqlite:////data/vramwise.sqlite3 \
    VRAMWISE_PORT=8000

EXPOSE 8000

# Liveness: GET /healthz (service/api/health.py) answers 200 when the process serves requests.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]

CMD ["vramwise", "serve", "--host", "0.0.0.0", "--port", "8000"]
