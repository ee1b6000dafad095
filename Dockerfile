# rltracker: web app + inbox worker + scheduler in one process.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PORT=8000 \
    DATABASE_URL=sqlite+aiosqlite:////data/rltracker.db

WORKDIR /app
# Dependencies first (cached layer), then the code. Editable install: the app finds its
# templates/, migrations/ and alembic.ini next to the bot/ package.
COPY pyproject.toml README.md alembic.ini ./
COPY bot ./bot
COPY analyzers ./analyzers
COPY migrations ./migrations
COPY templates ./templates
# Byte-compiled at build: with PYTHONDONTWRITEBYTECODE no process writes .pyc files, so without
# this every start (the app, each `rltracker analyze`) compiles the analyzers from source
# (~6 % of the analysis start-up, measured with callgrind; docs/analyzers.md, start15).
RUN pip install -e . \
 && python -m compileall -q bot analyzers migrations \
 && useradd --system --create-home --uid 10001 rltracker \
 && mkdir -p /data && chown rltracker /data

USER rltracker
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD python -c "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=4)"

# Migrations at start; `serve` refuses to run on a database behind them anyway.
CMD ["sh", "-c", "rltracker migrate && exec rltracker serve"]
