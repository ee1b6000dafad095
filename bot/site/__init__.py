"""What rltracker shows: the tracker pages, the JSON API and the nightly report.

Owns the page routes (`pages`) and the queries behind them (`data`), the operational and
JSON routes (`api`: /healthz, /metrics, /api/*), the nightly proposal-status report
(`report`) and its pages (`report_pages`), the preview page (`preview_pages`), people's
verdicts and the analyzer's agreement with them (`verdicts`), exports (`exports`), counts
(`stats`) and the Atom feeds of the reports, proposals and failure reports (`feeds`).

May import: bot.pipeline and everything below it. Never bot.webhooks, bot.app, bot.server,
bot.scheduler or bot.cli.
"""
