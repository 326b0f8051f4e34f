#!/usr/bin/env python3
"""Writes the Grafana dashboard over Warden's Prometheus metrics.

    python3 deploy/grafana/dashboard.py          # (re)write both copies
    python3 deploy/grafana/dashboard.py --check  # exit 1 when a copy is stale

Two copies: k8s/grafana-dashboard.json (import by hand, docker-compose's Grafana) and
helm/warden/dashboards/warden.json (the chart ships it as a ConfigMap; Helm cannot read
files outside the chart). scripts/test-extra.sh runs --check and checks that every metric
named here is registered somewhere in libs/*/src.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = [ROOT / "k8s" / "grafana-dashboard.json", ROOT / "helm" / "warden" / "dashboards" / "warden.json"]

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'instance=~"$instance"'
RI = "$__rate_interval"

_panels = []
_y = 0
_next_id = 1


def _id():
    global _next_id
    _next_id += 1
    return _next_id - 1


def row(title):
    global _y
    _panels.append({"type": "row", "title": title, "id": _id(), "collapsed": False,
                    "gridPos": {"h": 1, "w": 24, "x": 0, "y": _y}, "panels": []})
    _y += 1


_x = 0


def panel(title, targets, unit="short", kind="timeseries", w=8, h=8, description=""):
    """Append a panel; panels flow left to right, 24 columns per line."""
    global _x, _y
    if _x + w > 24:
        _x = 0
        _y += h
    p = {
        "type": kind,
        "title": title,
        "id": _id(),
        "datasource": DS,
        "description": description,
        "gridPos": {"h": h, "w": w, "x": _x, "y": _y},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}} if kind == "timeseries" else {},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DS, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }
    _panels.append(p)
    _x += w
    if _x >= 24:
        _x = 0
        _y += h


def end_row():
    global _x, _y
    if _x:
        _x = 0
        _y += 8


def rate(metric, by, extra=""):
    sel = SEL + (", " + extra if extra else "")
    return f"sum by ({by}) (rate({metric}{{{sel}}}[{RI}]))"


def quantiles(metric, by):
    return [
        (f"histogram_quantile({q}, sum by (le, {by}) (rate({metric}_bucket{{{SEL}}}[{RI}])))",
         f"p{int(q * 100)} {{{{{by}}}}}")
        for q in (0.5, 0.95, 0.99)
    ]


row("Processes and HTTP")
panel("Processes up", [(f"sum by (service) (warden_process_info{{{SEL}}})", "{{service}}")],
      kind="stat", w=6, description="warden_process_info, one per scraped process (the gateway is stdio only and not scraped).")
panel("HTTP requests / s", [(rate("warden_http_requests_total", "route, status"), "{{route}} {{status}}")], unit="reqps", w=9)
panel("HTTP latency", quantiles("warden_http_request_duration_seconds", "route"), unit="s", w=9)
end_row()

row("Send path (compliance core)")
panel("Send decisions / s", [(rate("warden_send_decisions_total", "outcome"), "{{outcome}}")], unit="ops",
      description="OK or the refusal code. Sends from the scheduler (scheduled messages, campaigns); gateways on agent hosts are not scraped.")
panel("Send latency (decide, record, publish)", quantiles("warden_send_duration_seconds", "published"), unit="s")
panel("Refusal share", [(f'sum(rate(warden_send_decisions_total{{{SEL}, outcome!="OK"}}[{RI}])) / sum(rate(warden_send_decisions_total{{{SEL}}}[{RI}]))', "refused")],
      unit="percentunit")
end_row()

row("Dispatcher")
panel("Platform outcomes / s", [
    (f"sum(rate(warden_dispatcher_sent_total{{{SEL}}}[{RI}]))", "sent"),
    (rate("warden_dispatcher_failed_total", "code"), "failed {{code}}"),
    (f"sum(rate(warden_dispatcher_retries_total{{{SEL}}}[{RI}]))", "retried"),
], unit="ops")
panel("Platform call latency", quantiles("warden_platform_request_duration_seconds", "outcome"), unit="s")
panel("In flight", [(f"sum(warden_dispatcher_in_flight{{{SEL}}})", "in flight")])
panel("Held / skipped / s", [
    (rate("warden_dispatcher_held_total", "reason"), "held {{reason}}"),
    (rate("warden_dispatcher_skipped_total", "reason"), "skipped {{reason}}"),
], unit="ops")
panel("Halts (last hour)", [(f"sum by (code) (increase(warden_dispatcher_halts_total{{{SEL}}}[1h]))", "{{code}}")],
      kind="stat", description="Account, token or policy errors: campaigns paused, an operator is needed.")
panel("Rate limit wait", [
    (f"histogram_quantile({q}, sum by (le) (rate(warden_ratelimit_wait_seconds_bucket{{{SEL}}}[{RI}])))", f"p{int(q * 100)}")
    for q in (0.5, 0.95, 0.99)
] + [(f"sum(warden_ratelimit_fallback{{{SEL}}})", "limiters on local fallback (Redis down)")], unit="s")
panel("Unknown outcomes (last hour)", [
    (f"sum by (event) (increase(warden_dispatcher_unknown_outcomes_total{{{SEL}}}[1h]))", "{{event}}"),
    (f"sum(increase(warden_dispatcher_resent_unknown_total{{{SEL}}}[1h]))", "resent (all)"),
], kind="stat", w=12,
      description="Sends whose outcome was unknown (call timed out, or its dispatcher died): held for the status webhook, "
                  "resolved by it, resent on webhook evidence, or resent after DISPATCH_UNKNOWN_MAX_WAIT (each resend may duplicate).")
panel("Unknown outcomes held now", [
    (f"max(warden_dispatcher_unknown_outcomes_held{{{SEL}}})", "held `sending`"),
    (f"max(warden_dispatcher_unknown_outcome_oldest_seconds{{{SEL}}})", "oldest (s)"),
    (f'sum(increase(warden_dispatcher_sweeps_total{{{SEL}, result="error"}}[{RI}]))', "failed sweeps"),
], w=12,
      description="From the sweep. With status webhooks quiet the oldest stays below DISPATCH_LEASE + DISPATCH_UNKNOWN_MAX_WAIT + "
                  "DISPATCH_SWEEP_INTERVAL; longer only while a webhook backlog drains.")
end_row()

row("Webhook")
panel("Events applied / s", [(rate("warden_webhook_events_total", "kind"), "{{kind}}")], unit="ops")
panel("Signature failures and replays / s", [
    (f"sum(rate(warden_webhook_signature_failures_total{{{SEL}}}[{RI}]))", "bad signature"),
    (f"sum(rate(warden_webhook_replays_total{{{SEL}}}[{RI}]))", "replayed"),
], unit="ops")
panel("Ingest latency (one transaction)", quantiles("warden_webhook_ingest_duration_seconds", "outcome"), unit="s")
panel("Window rules, foreign numbers, retries / s", [
    (rate("warden_webhook_inbound_without_window_total", "reason"), "stored, no window: {{reason}}"),
    (f"sum(rate(warden_webhook_unknown_sender_total{{{SEL}}}[{RI}]))", "other business number (not stored)"),
    (f"sum(rate(warden_webhook_retries_total{{{SEL}}}[{RI}]))", "retryable failure requeued"),
], unit="ops", w=24,
      description="Inbound messages that open no care window (system messages, implausible timestamps), events for numbers "
                  "this deployment does not serve, and retryable platform failures reported by status webhook and requeued.")
end_row()

row("Scheduler, campaigns, relay")
panel("Due rows and relay backlog", [
    (f"sum(warden_scheduler_due_rows{{{SEL}}})", "due scheduled messages"),
    (f"sum(warden_relay_backlog{{{SEL}}})", "queued, not yet published"),
])
panel("Scheduled dispatch / s", [
    (rate("warden_scheduler_dispatched_total", "outcome"), "{{outcome}}"),
    (rate("warden_scheduler_claimed_total", "kind"), "claimed {{kind}}"),
    (f"sum(rate(warden_relay_published_total{{{SEL}}}[{RI}]))", "relay published"),
], unit="ops")
panel("Poll cycle", quantiles("warden_scheduler_tick_duration_seconds", "busy"), unit="s")
panel("Campaigns by status", [(f"sum by (status) (warden_scheduler_campaigns{{{SEL}}})", "{{status}}")])
panel("Protected senders (no marketing)", [(f"max by (sender) (warden_sender_protected{{{SEL}}})", "{{sender}}")],
      description="1 while a number sends no marketing: its quality turned RED or it met a halt-class platform error "
                  "(131048, 131031, 368). Lifted by UNFLAGGED or resume_sender.")
panel("Campaign recipients / s", [
    (rate("warden_campaign_recipients_total", "outcome"), "{{outcome}}"),
    (f"sum(rate(warden_campaign_cancelled_messages_total{{{SEL}}}[{RI}]))", "cancelled before send"),
], unit="ops")
end_row()

DASHBOARD = {
    "uid": "warden-overview",
    "title": "Warden",
    "description": "Warden processes: HTTP, send path, dispatcher, webhook, scheduler (metrics from /metrics).",
    "tags": ["warden"],
    "timezone": "browser",
    "schemaVersion": 39,
    "version": 1,
    "editable": True,
    "graphTooltip": 1,
    "refresh": "30s",
    "time": {"from": "now-1h", "to": "now"},
    "templating": {"list": [
        {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0},
        {"name": "instance", "label": "Instance", "type": "query", "datasource": DS,
         "query": {"query": "label_values(warden_process_info, instance)", "refId": "instance"},
         "definition": "label_values(warden_process_info, instance)",
         "includeAll": True, "multi": True, "allValue": ".*", "current": {}, "refresh": 2, "hide": 0},
    ]},
    "annotations": {"list": []},
    "panels": _panels,
}


def render():
    return json.dumps(DASHBOARD, indent=2, sort_keys=False) + "\n"


def main():
    text = render()
    if "--check" in sys.argv[1:]:
        stale = [str(p.relative_to(ROOT)) for p in OUTPUTS if not p.is_file() or p.read_text() != text]
        if stale:
            print("stale dashboard copies (run python3 deploy/grafana/dashboard.py): " + ", ".join(stale))
            return 1
        return 0
    for p in OUTPUTS:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
