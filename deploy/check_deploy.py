#!/usr/bin/env python3
"""Offline checks of Warden's packaging that no tool here does by itself.

Run by scripts/test-extra.sh inside target/pyenv-deploy (needs PyYAML and jsonschema):

    check_deploy.py k8s       the plain manifests: what every Deployment must carry
    check_deploy.py helm      the chart: structure, values vs values.schema.json, template blocks
    check_deploy.py metrics   metric naming in libs/*/src, the dashboard's metrics exist
    check_deploy.py docker    Dockerfile and docker-compose.yml against the workspace

Prints failed checks and a count per group (-v: every check); exits 1 when any failed.
"""

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = ["webhook", "dispatcher", "scheduler", "mcp-gateway"]
PORTS = {"webhook": 8080, "dispatcher": 9090, "scheduler": 9091, "mcp-gateway": 8765}
# The variable that names each component's listening port (MCP_HTTP_ADDR is ip:port).
PORT_VARS = {"webhook": "SERVER_HTTP_PORT", "mcp-gateway": "MCP_HTTP_ADDR"}
# Public paths per Ingress: nothing else (never /health or /metrics).
INGRESS_PATHS = {"webhook": ["/webhook"], "mcp-gateway": ["/mcp", "/.well-known/oauth-protected-resource"]}
SECRET_KEYS = {"PLATFORM_ACCESS_TOKEN", "DB_PASSWORD", "REDIS_PASSWORD"}
WEBHOOK_SECRET_KEYS = SECRET_KEYS | {"PLATFORM_APP_SECRET", "PLATFORM_WEBHOOK_VERIFY_TOKEN"}
POLICIES_PATH = "/etc/warden/policies/default.yaml"

failures = []
passed = [0]
VERBOSE = "-v" in sys.argv[1:]


def check(ok, what):
    if VERBOSE or not ok:
        print(("  ok   " if ok else "  FAIL ") + what)
    if ok:
        passed[0] += 1
    else:
        failures.append(what)


def load_all(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


# ---------------------------------------------------------------------------------------- k8s
def k8s():
    kdir = ROOT / "k8s"
    kust = yaml.safe_load((kdir / "kustomization.yaml").read_text())
    resources = kust.get("resources", [])
    top = sorted(p.name for p in kdir.glob("*.yaml") if p.name != "kustomization.yaml")
    check(sorted(resources) == top, f"kustomization.yaml lists every top-level manifest ({', '.join(top)})")
    for gen in kust.get("configMapGenerator", []):
        for f in gen.get("files", []):
            src = f.split("=", 1)[-1]
            check((kdir / src).is_file(), f"configMapGenerator file k8s/{src} exists")
    check(json.loads((kdir / "grafana-dashboard.json").read_text()).get("panels") is not None,
          "k8s/grafana-dashboard.json is a dashboard")

    objs = []
    for name in resources:
        objs += load_all(kdir / name)
    by = {(o["kind"], o["metadata"]["name"]): o for o in objs}

    cm = by.get(("ConfigMap", "warden-config"))
    check(cm is not None, "ConfigMap warden-config exists")
    if cm:
        data = cm["data"]
        check(data.get("POLICIES_PATH") == POLICIES_PATH, f"POLICIES_PATH is {POLICIES_PATH}")
        leaked = sorted(set(data) & WEBHOOK_SECRET_KEYS)
        check(not leaked, f"no secret in the ConfigMap ({leaked or 'none'})")
        check(all(isinstance(v, str) for v in data.values()), "ConfigMap values are strings")
    pol = by.get(("ConfigMap", "warden-policies"))
    check(pol is not None and pol["data"].get("default.yaml") == (ROOT / "policies/default.yaml").read_text(),
          "ConfigMap warden-policies holds policies/default.yaml verbatim")

    for comp in COMPONENTS:
        dep = by.get(("Deployment", f"warden-{comp}"))
        check(dep is not None, f"Deployment warden-{comp} exists")
        if not dep:
            continue
        deployment_checks(comp, dep["spec"]["template"]["spec"], dep["spec"]["template"]["metadata"]["labels"],
                          "warden-config", "warden-policies", "warden-secrets", f"warden-{comp}")
        check(("PodDisruptionBudget", f"warden-{comp}") in by, f"{comp}: PodDisruptionBudget")
        svc = by.get(("Service", f"warden-{comp}"))
        check(svc is not None and svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items(),
              f"{comp}: Service selects the pods")
    for comp in ["webhook", "dispatcher", "mcp-gateway"]:
        hpa = by.get(("HorizontalPodAutoscaler", f"warden-{comp}"))
        check(hpa is not None and hpa["apiVersion"] == "autoscaling/v2"
              and hpa["spec"]["scaleTargetRef"]["name"] == f"warden-{comp}",
              f"{comp}: HorizontalPodAutoscaler autoscaling/v2 targets the Deployment")
    for comp, want in INGRESS_PATHS.items():
        ing = by.get(("Ingress", f"warden-{comp}"))
        paths = [p["path"] for r in (ing or {}).get("spec", {}).get("rules", []) for p in r["http"]["paths"]]
        check(paths == want, f"Ingress warden-{comp} exposes {want} only (not /metrics or /health)")
    gw = by.get(("Deployment", "warden-mcp-gateway"))
    if gw:
        c = gw["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in c.get("env", [])}
        check(c.get("args") == ["mcp-gateway", "--http"], "mcp-gateway: runs `mcp-gateway --http`")
        check(env.get("MCP_HTTP_AUTH") != "none", "mcp-gateway: authentication on (MCP_HTTP_AUTH is not none)")

    secret = load_all(kdir / "examples/secret.yaml")[0]
    check(secret["metadata"]["name"] == "warden-secrets" and set(secret["stringData"]) == WEBHOOK_SECRET_KEYS,
          "examples/secret.yaml carries every key the Deployments reference")
    check("examples/secret.yaml" not in resources and "optional/migrate-job.yaml" not in resources,
          "the example Secret and the migrate Job are not applied by default")
    job = load_all(kdir / "optional/migrate-job.yaml")[0]
    c = job["spec"]["template"]["spec"]["containers"][0]
    check(c["args"] == ["warden-admin", "migrate"], "migrate Job runs `warden-admin migrate`")


def deployment_checks(comp, pod, labels, config_name, policies_name, secret_name, what):
    c = pod["containers"][0]
    port = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    check(c.get("args", [None])[0] == comp, f"{comp}: container runs `{comp}`")
    env = {e["name"]: e for e in c.get("env", [])}
    port_var = PORT_VARS.get(comp, "ADMIN_HTTP_PORT")
    value = str(env.get(port_var, {}).get("value", ""))
    check(value.rsplit(":", 1)[-1] == str(list(port.values())[0]) if port else False,
          f"{comp}: {port_var} matches the container port")
    for probe in ["livenessProbe", "readinessProbe"]:
        get = c.get(probe, {}).get("httpGet", {})
        check(get.get("path") == "/health" and get.get("port") in port, f"{comp}: {probe} GET /health on a named port")
    res = c.get("resources", {})
    check({"cpu", "memory"} <= set(res.get("requests", {})) and {"cpu", "memory"} <= set(res.get("limits", {})),
          f"{comp}: cpu/memory requests and limits")
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) != 0, f"{comp}: runs as non-root")
    check(csc.get("allowPrivilegeEscalation") is False and csc.get("readOnlyRootFilesystem") is True
          and csc.get("capabilities", {}).get("drop") == ["ALL"], f"{comp}: no privilege escalation, read-only root, no capabilities")
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})}
    want = WEBHOOK_SECRET_KEYS if comp == "webhook" else SECRET_KEYS
    check(set(refs) == want and all(r["name"] == secret_name and r["key"] == k for k, r in refs.items()),
          f"{comp}: secretKeyRef {sorted(want)} from {secret_name}")
    check(not any(k in env and "value" in env[k] for k in WEBHOOK_SECRET_KEYS), f"{comp}: no secret as a plain value")
    check(any(e.get("configMapRef", {}).get("name") == config_name for e in c.get("envFrom", [])),
          f"{comp}: env from ConfigMap {config_name}")
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    pol_vol = mounts.get(str(Path(POLICIES_PATH).parent))
    check(pol_vol is not None and vols.get(pol_vol, {}).get("configMap", {}).get("name") == policies_name,
          f"{comp}: policy ConfigMap mounted at {Path(POLICIES_PATH).parent}")


# --------------------------------------------------------------------------------------- helm
REQUIRED_CHART_FILES = [
    "Chart.yaml", "values.yaml", "values.schema.json", ".helmignore", "templates/_helpers.tpl",
    "templates/NOTES.txt", "templates/configmap.yaml", "templates/deployments.yaml", "templates/services.yaml",
    "templates/ingress.yaml", "templates/pdb.yaml", "templates/hpa.yaml", "templates/servicemonitor.yaml",
    "templates/grafana-dashboard.yaml", "dashboards/warden.json",
]
OPENERS = re.compile(r"\{\{-?\s*(if|range|with|define|block)\b")
ENDS = re.compile(r"\{\{-?\s*end\s*-?\}\}")
ACTION = re.compile(r"\{\{(.*?)\}\}", re.S)


def helm():
    import jsonschema

    chart = ROOT / "helm/warden"
    for f in REQUIRED_CHART_FILES:
        check((chart / f).is_file(), f"helm/warden/{f} exists")
    meta = yaml.safe_load((chart / "Chart.yaml").read_text())
    check(meta.get("apiVersion") == "v2" and meta.get("name") == "warden"
          and re.fullmatch(r"\d+\.\d+\.\d+([-+].*)?", str(meta.get("version", ""))) is not None
          and meta.get("appVersion"), "Chart.yaml: apiVersion v2, name warden, SemVer version, appVersion")
    cargo_version = re.search(r'^version = "([^"]+)"', (ROOT / "Cargo.toml").read_text(), re.M).group(1)
    check(str(meta.get("appVersion")) == cargo_version, f"Chart appVersion = workspace version {cargo_version}")

    schema = json.loads((chart / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    check(True, "values.schema.json is a valid draft-07 JSON Schema")
    values = yaml.safe_load((chart / "values.yaml").read_text())
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(values), key=lambda e: list(e.path))
    for e in errors:
        print(f"       values.yaml {'/'.join(map(str, e.path)) or '(root)'}: {e.message}")
    check(not errors, "values.yaml validates against values.schema.json")
    # The schema must refuse what it is there to refuse.
    bad = [
        ("tier", "enterprise"), ("rateLimitMps", 0), ("existingSecret", ""),
        ("database", {**values["database"], "sslmode": "require"}),
        ("webhook", {**values["webhook"], "replicaz": 3}),
    ]
    v = jsonschema.Draft7Validator(schema)
    for key, value in bad:
        check(not v.is_valid({**values, key: value}), f"values.schema.json refuses {key}={value!r:.40}")
    check(values.get("policies") == (ROOT / "policies/default.yaml").read_text(),
          "values.yaml policies = policies/default.yaml")
    check(values["image"]["repository"] and "tag" in values["image"], "image repository/tag in values")
    for comp in ["webhook", "dispatcher", "scheduler"]:
        check(values[comp]["port"] == PORTS[comp], f"values {comp}.port = {PORTS[comp]}")

    for tpl in sorted((chart / "templates").iterdir()):
        text = tpl.read_text()
        check(text.count("{{") == text.count("}}"), f"{tpl.name}: balanced {{{{ }}}}")
        actions = ACTION.findall(text)
        opened = sum(1 for a in actions if OPENERS.match("{{" + a + "}}"))
        ended = sum(1 for a in actions if ENDS.match("{{" + a + "}}"))
        check(opened == ended, f"{tpl.name}: {opened} if/range/with/define blocks, {ended} ends")
        helpers = (chart / "templates/_helpers.tpl").read_text()
        refs = sorted(set(re.findall(r'include "([^"]+)"', text)))
        undefined = [r for r in refs if f'define "{r}"' not in helpers]
        paths = sorted(set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", text)))
        unknown = [p for p in paths if not has_path(values, p)]
        check(not undefined and not unknown,
              f"{tpl.name}: {len(refs)} helpers defined, {len(paths)} .Values paths in values.yaml"
              + (f" (undefined {undefined}, unknown {unknown})" if undefined or unknown else ""))
    # Values reached through a component variable ($c := index $.Values $name).
    for comp in ["webhook", "dispatcher", "scheduler"]:
        for key in ["replicas", "port", "resources", "pdb"]:
            check(key in values[comp], f"values {comp}.{key} (used through $c)")
    for comp in ["webhook", "dispatcher"]:
        check("autoscaling" in values[comp], f"values {comp}.autoscaling")
    gw = values.get("mcpGateway", {})
    check(gw.get("port") == PORTS["mcp-gateway"] and gw.get("auth") != "none",
          f"values mcpGateway.port = {PORTS['mcp-gateway']}, authentication on")


def has_path(values, path):
    node = values
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


# ------------------------------------------------------------------------------------ metrics
REGISTER = re.compile(
    r"(register_(int_counter|counter|int_gauge|gauge|histogram)(_vec)?!\s*\(\s*(?:(?:Histogram)?Opts::new\s*\(\s*)?"
    r"|latency_histogram\s*\(\s*)\"(warden_[a-z0-9_]+)\"",
    re.S,
)


def metrics():
    names = {}
    for src in sorted(ROOT.glob("libs/*/src/**/*.rs")):
        for m in REGISTER.finditer(src.read_text()):
            kind = "histogram" if m.group(1).startswith("latency_histogram") else m.group(2)
            names[m.group(4)] = (kind, src.relative_to(ROOT))
    check(len(names) >= 10, f"{len(names)} warden_* metrics registered in libs/*/src")
    for name, (kind, src) in sorted(names.items()):
        if "counter" in kind:
            ok, rule = name.endswith("_total"), "counters end in _total"
        elif kind == "histogram":
            ok, rule = name.endswith("_seconds"), "histograms are in seconds (_seconds)"
        else:
            ok, rule = not name.endswith("_total"), "gauges do not end in _total"
        if not ok:
            check(False, f"{name} ({src}): {rule}")
    check(True, "metric names: warden_ prefix, counters _total, histograms _seconds, gauges plain")
    dash = (ROOT / "k8s/grafana-dashboard.json").read_text()
    used = {re.sub(r"_(bucket|sum|count)$", "", n) for n in re.findall(r"warden_[a-z0-9_]+", dash)}
    missing = sorted(used - set(names))
    check(not missing, f"the dashboard's {len(used)} metrics are all registered ({missing or 'none missing'})")
    unused = sorted(set(names) - used)
    if unused:
        print(f"  note registered but not on the dashboard: {', '.join(unused)}")


# ------------------------------------------------------------------------------------- docker
def docker():
    df = (ROOT / "Dockerfile").read_text()
    bins = sorted(p.name for p in (ROOT / "bins").iterdir() if (p / "Cargo.toml").is_file())
    loop = re.search(r"for b in ([a-z0-9 -]+); do", df)
    check(loop is not None and sorted(loop.group(1).split()) == bins, f"Dockerfile copies every binary ({', '.join(bins)})")
    for b in bins:
        check(f"-p {b}" in df, f"Dockerfile builds -p {b}")
    check(re.search(r"^FROM rust:1\.95-bookworm|^ARG RUST_IMAGE=rust:1\.95-bookworm", df, re.M) is not None,
          "builder: rust:1.95-bookworm")
    check("ARG RUNTIME_IMAGE=debian:bookworm-slim" in df, "runtime: debian:bookworm-slim")
    check("--mount=type=cache" in df, "cargo cache mounts")
    user = re.findall(r"^USER\s+(\S+)", df, re.M)
    check(bool(user) and not user[-1].startswith(("root", "0")), "runtime runs as a non-root USER")
    for src in re.findall(r"^COPY (?:--\S+ )*(\S+) \S+$", df, re.M):
        if not src.startswith("/") and src != ".":
            check((ROOT / src).exists(), f"COPY source {src} exists")
    ignore = (ROOT / ".dockerignore").read_text().split()
    for needed in ["policies", "templates", "migrations", "deploy", "libs", "bins"]:
        check(not any(i.rstrip("/") == needed for i in ignore), f".dockerignore keeps {needed}/")
    check("target/" in ignore, ".dockerignore drops target/")

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    for s in ["postgres", "redis", "nats", "platform-sim", "webhook", "dispatcher", "scheduler", "otel-collector"]:
        check(s in services, f"compose service {s}")
    for s in ["postgres", "redis", "nats", "platform-sim", "webhook", "dispatcher", "scheduler"]:
        check("healthcheck" in services.get(s, {}), f"compose {s} has a healthcheck")
    check("-js" in services["nats"]["command"] and "8222" in services["nats"]["command"]
          and any("8222" in p for p in services["nats"]["ports"]), "nats: JetStream on, monitoring 8222 published")
    for s in ["webhook", "dispatcher", "scheduler"]:
        env = services[s]["environment"]
        check(env.get("PLATFORM_API_URL") == "http://platform-sim:8089", f"{s}: PLATFORM_API_URL -> platform-sim")
        check(env.get("OTEL_EXPORTER_OTLP_ENDPOINT") == "http://otel-collector:4318", f"{s}: OTLP -> collector")
    http = services.get("mcp-http", {})
    check(http.get("command") == ["mcp-gateway", "--http"] and "healthcheck" in http
          and any(p.endswith(":8765") for p in http.get("ports", [])),
          "compose mcp-http: `mcp-gateway --http` on 8765 with a healthcheck")
    sim = services["platform-sim"]["environment"]
    check(sim.get("SIM_WEBHOOK_URL") == "http://webhook:8080/webhook", "platform-sim: SIM_WEBHOOK_URL -> webhook")
    check(sim.get("PLATFORM_APP_SECRET") == services["webhook"]["environment"].get("PLATFORM_APP_SECRET"),
          "platform-sim and webhook share PLATFORM_APP_SECRET")
    for vol in [v for s in services.values() for v in s.get("volumes", []) if v.startswith("./")]:
        check((ROOT / vol.split(":")[0]).exists(), f"compose bind source {vol.split(':')[0]} exists")
    otel = yaml.safe_load((ROOT / "deploy/otel-collector.yaml").read_text())
    check(otel["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
          and "debug" in otel["service"]["pipelines"]["traces"]["exporters"],
          "collector: OTLP/HTTP 4318 in, debug exporter out")


def main():
    groups = {"k8s": k8s, "helm": helm, "metrics": metrics, "docker": docker}
    for name in [a for a in sys.argv[1:] if a != "-v"] or list(groups):
        before = (passed[0], len(failures))
        try:
            groups[name]()
        except Exception as e:  # a malformed file is a failed check, not a traceback to decode
            check(False, f"{name}: {type(e).__name__}: {e}")
        ok, bad = passed[0] - before[0], len(failures) - before[1]
        print(f"  {name}: {ok} checks passed" + (f", {bad} FAILED" if bad else ""))
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
