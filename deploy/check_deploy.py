#!/usr/bin/env python3
"""Offline checks of Warden's packaging that no tool here does by itself.

Run by scripts/test-extra.sh inside target/pyenv-deploy (needs PyYAML and jsonschema):

    check_deploy.py k8s       the plain manifests: what every Deployment must carry; the optional
                              senders component applied to them
    check_deploy.py helm      the chart: structure, values vs values.schema.json, template blocks,
                              the senders values (example values, schema, guarded templates)
    check_deploy.py metrics   metric naming in libs/*/src, the dashboard's metrics exist
    check_deploy.py docker    Dockerfile and docker-compose.yml against the workspace, the senders
                              override (deploy/compose-senders.yml)

Prints failed checks and a count per group (-v: every check); exits 1 when any failed.
"""

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPONENTS = ["webhook", "dispatcher", "scheduler", "mcp-gateway", "console"]
PORTS = {"webhook": 8080, "dispatcher": 9090, "scheduler": 9091, "mcp-gateway": 8765, "console": 8090}
# The variable that names each component's listening port (MCP_HTTP_ADDR is ip:port).
PORT_VARS = {"webhook": "SERVER_HTTP_PORT", "mcp-gateway": "MCP_HTTP_ADDR", "console": "CONSOLE_HTTP_ADDR"}
# Public paths per Ingress: nothing else (never /health or /metrics).
INGRESS_PATHS = {"webhook": ["/webhook"], "mcp-gateway": ["/mcp", "/.well-known/oauth-protected-resource"]}
SECRET_KEYS = {"PLATFORM_ACCESS_TOKEN", "DB_PASSWORD", "REDIS_PASSWORD"}
WEBHOOK_SECRET_KEYS = SECRET_KEYS | {"PLATFORM_APP_SECRET", "PLATFORM_WEBHOOK_VERIFY_TOKEN"}
POLICIES_PATH = "/etc/warden/policies/default.yaml"
# Several senders: the senders file's path in every deployment (chart, kustomize component, compose).
SENDERS_PATH = "/etc/warden/senders/senders.yaml"
SENDERS_SECRET = "warden-senders"
SENDER_ID = re.compile(r"[a-z0-9_-]{1,32}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

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
    check(not any("SENDERS_PATH" in str(d) for d in objs), "the base sets no SENDERS_PATH (one sender by default)")
    k8s_senders(resources, by)


def senders_file(doc, what):
    """Checks a senders file (version 1) and returns the env var names it holds, in order."""
    senders = doc.get("senders") if isinstance(doc, dict) else None
    check(isinstance(doc, dict) and doc.get("version") == 1 and isinstance(senders, list) and len(senders) > 0,
          f"{what}: version 1 with a non-empty senders list")
    if not isinstance(senders, list):
        return []
    ids = [s.get("id") for s in senders]
    check(all(isinstance(i, str) and SENDER_ID.fullmatch(i) for i in ids) and len(set(ids)) == len(ids),
          f"{what}: sender ids unique and [a-z0-9_-]{{1,32}} ({', '.join(map(str, ids))})")
    phones = [s.get("phone_number_id") for s in senders]
    check(all(isinstance(p, str) and p for p in phones) and len(set(phones)) == len(phones),
          f"{what}: phone_number_id quoted strings, one sender per number")
    check(all(isinstance(s.get(k), str) and s.get(k) for s in senders for k in ["waba_id", "portfolio_id"]),
          f"{what}: every sender has waba_id and portfolio_id (strings)")
    check(sum(1 for s in senders if s.get("default") is True) == 1, f"{what}: exactly one default sender")
    # Senders of one app may share its app secret (one variable named twice).
    names = [s.get(k) for s in senders for k in ["access_token_env", "app_secret_env"]]
    check(all(isinstance(n, str) and ENV_NAME.fullmatch(n) for n in names),
          f"{what}: every sender names an access_token_env and an app_secret_env")
    clash = sorted(set(map(str, names)) & (WEBHOOK_SECRET_KEYS | {"SENDERS_PATH"}))
    check(not clash, f"{what}: no named env var reuses a Warden variable ({clash or 'none'})")
    check(all(k not in s for s in senders for k in ["access_token", "app_secret", "token", "secret"]),
          f"{what}: no secret in the file (only the names of env vars)")
    return list(dict.fromkeys(n for n in names if isinstance(n, str)))


def json_patch_add(doc, ops):
    """Applies the `add` operations of a JSON patch (all the senders component needs)."""
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")]
        node = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node.insert(len(node) if last == "-" else int(last), op["value"])
        else:
            node[last] = op["value"]


def k8s_senders(base_resources, by):
    """The optional component k8s/optional/senders applied to the base, as kustomize would."""
    cdir = ROOT / "k8s/optional/senders"
    comp = yaml.safe_load((cdir / "kustomization.yaml").read_text())
    check(comp.get("kind") == "Component" and comp.get("apiVersion") == "kustomize.config.k8s.io/v1alpha1",
          "optional/senders: a kustomize Component")
    check(not any("senders" in r for r in base_resources)
          and not yaml.safe_load((ROOT / "k8s/kustomization.yaml").read_text()).get("components"),
          "optional/senders is not applied by `kubectl apply -k k8s/`")
    listed = [r for r in comp.get("resources", [])] + [p["path"] for p in comp.get("patches", []) if "path" in p]
    listed += [f.split("=", 1)[-1] for g in comp.get("configMapGenerator", []) for f in g.get("files", [])]
    on_disk = sorted(p.name for p in cdir.iterdir() if p.name != "kustomization.yaml")
    check(sorted(listed) == on_disk, f"optional/senders/kustomization.yaml lists its files ({', '.join(on_disk)})")
    gens = {g["name"]: g for g in comp.get("configMapGenerator", [])}
    gen = gens.get(SENDERS_SECRET)
    files = dict((f.split("=", 1) if "=" in f else (Path(f).name, f)) for f in (gen or {}).get("files", []))
    check(gen is not None and list(files) == [Path(SENDERS_PATH).name],
          f"optional/senders: ConfigMap {SENDERS_SECRET} holds one key, {Path(SENDERS_PATH).name}")
    if gen is None or list(files) != [Path(SENDERS_PATH).name]:
        return
    names = senders_file(yaml.safe_load((cdir / files[Path(SENDERS_PATH).name]).read_text()),
                         "optional/senders/senders.yaml")

    patches = comp.get("patches", [])
    check(len(patches) == 1, "optional/senders: one patch, for every Warden Deployment")
    if len(patches) != 1:
        return
    target = patches[0].get("target", {})
    selector = dict(kv.split("=", 1) for kv in target.get("labelSelector", "").split(",") if "=" in kv)
    deps = {name: obj for (kind, name), obj in by.items() if kind == "Deployment"
            and (target.get("kind") in (None, "Deployment"))
            and selector.items() <= obj["metadata"].get("labels", {}).items()
            and (not target.get("name") or re.fullmatch(target["name"], name))}
    want = sorted(f"warden-{c}" for c in COMPONENTS)
    check(sorted(deps) == want, f"optional/senders: the patch targets {', '.join(want)}")
    ops = yaml.safe_load((cdir / patches[0]["path"]).read_text())
    check(isinstance(ops, list) and all(op.get("op") == "add" for op in ops),
          f"optional/senders/{patches[0]['path']}: a JSON patch of add operations")
    if not isinstance(ops, list) or not all(op.get("op") == "add" for op in ops):
        return
    secret = load_all(ROOT / "k8s/examples/senders-secret.yaml")[0]
    check(secret["metadata"]["name"] == SENDERS_SECRET and set(secret.get("stringData", {})) == set(names),
          f"examples/senders-secret.yaml ({SENDERS_SECRET}) has one key per env var the senders file names")
    for name, dep in sorted(deps.items()):
        comp_name = name.removeprefix("warden-")
        patched = json.loads(json.dumps(dep))
        json_patch_add(patched, ops)
        pod = patched["spec"]["template"]["spec"]
        # What the base must carry still holds after the patch, then the senders pieces.
        before = len(failures)
        base_refs = {e["name"] for e in dep["spec"]["template"]["spec"]["containers"][0].get("env", [])
                     if "secretKeyRef" in e.get("valueFrom", {})}
        c = pod["containers"][0]
        refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in c.get("env", [])
                if "secretKeyRef" in e.get("valueFrom", {})}
        senders_pod_checks(f"{comp_name} + optional/senders", pod, SENDERS_SECRET, names,
                           lambda ref: ref.get("name") == SENDERS_SECRET and ref.get("key") in secret.get("stringData", {}))
        check(base_refs <= set(refs), f"{comp_name} + optional/senders: the base's secretKeyRefs stay")
        if len(failures) > before:
            print(f"       (patched {name} from k8s/optional/senders/{patches[0]['path']})")


def senders_pod_checks(what, pod, configmap, names, ref_ok):
    """One pod with the senders file: the ConfigMap's volume mounted read-only in the directory of
    SENDERS_PATH, SENDERS_PATH set, every env var the file names from a Secret key."""
    c = pod["containers"][0]
    env = {e["name"]: e for e in c.get("env", [])}
    path = env.get("SENDERS_PATH", {}).get("value")
    check(path == SENDERS_PATH, f"{what}: SENDERS_PATH = {SENDERS_PATH}" + ("" if path == SENDERS_PATH else f" (not {path})"))
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [m for m in c.get("volumeMounts", []) if vols.get(m["name"], {}).get("configMap", {}).get("name") == configmap]
    check(len(mounts) == 1 and mounts[0].get("readOnly") is True
          and str(Path(mounts[0]["mountPath"]) / Path(SENDERS_PATH).name) == path,
          f"{what}: ConfigMap {configmap} mounted read-only at {Path(SENDERS_PATH).parent}, the file at SENDERS_PATH")
    refs = {n: e.get("valueFrom", {}).get("secretKeyRef") for n, e in env.items()}
    missing = [n for n in names if not refs.get(n) or not ref_ok(refs[n])]
    check(not missing, f"{what}: every env var the senders file names has a secretKeyRef"
          + (f" (missing or wrong: {missing})" if missing else ""))
    check(not any("value" in env.get(n, {}) for n in names), f"{what}: no sender secret as a plain value")


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
    "templates/grafana-dashboard.yaml", "templates/senders.yaml", "dashboards/warden.json",
    "examples/senders-values.yaml",
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
    for comp in ["webhook", "dispatcher", "scheduler", "console"]:
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
    for comp in ["webhook", "dispatcher", "scheduler", "console"]:
        for key in ["replicas", "port", "resources", "pdb"]:
            check(key in values[comp], f"values {comp}.{key} (used through $c)")
    for comp in ["webhook", "dispatcher"]:
        check("autoscaling" in values[comp], f"values {comp}.autoscaling")
    gw = values.get("mcpGateway", {})
    check(gw.get("port") == PORTS["mcp-gateway"] and gw.get("auth") != "none",
          f"values mcpGateway.port = {PORTS['mcp-gateway']}, authentication on")
    helm_senders(chart, values, schema)


def deep_merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(base[k], v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return out


# A template's senders pieces render only when senders.enabled: every mention of senders outside
# a comment sits in `if ...senders.enabled` (not its else) or in a `define "warden.senders..."`.
TEMPLATE_TOKEN = re.compile(r"\{\{(.*?)\}\}", re.S)


def unguarded_senders(text):
    stack, bad, pos = [], [], 0
    for m in list(TEMPLATE_TOKEN.finditer(text)) + [None]:
        literal = text[pos:m.start() if m else len(text)]
        action = m.group(1).strip("- \t\n") if m else ""
        pos = m.end() if m else len(text)
        guard = lambda k, a: (k == "if" and "senders.enabled" in a) or (k == "define" and '"warden.senders' in a)
        guarded = any(guard(k, a) for k, a in stack)
        word = (action.split() or [""])[0]
        opens_guard = guard(word, action) and word in ("if", "define")
        for piece in [literal] + ([action] if m and not action.startswith("/*") and not opens_guard else []):
            if re.search(r"senders", piece, re.I) and not guarded:
                bad.append(next(ln for ln in piece.splitlines() if re.search(r"senders", ln, re.I)).strip()[:60])
        if not m:
            break
        if word in ("if", "range", "with", "define", "block"):
            stack.append((word, action))
        elif word == "else" and stack:
            stack[-1] = ("else", action)
        elif word == "end" and stack:
            stack.pop()
    return bad


def helm_senders(chart, values, schema):
    """Several senders: off by default, the example values consistent, the templates' paths agree."""
    import jsonschema

    v = jsonschema.Draft7Validator(schema)
    check(values.get("senders", {}).get("enabled") is False, "values senders.enabled is false by default")
    for tpl in sorted((chart / "templates").iterdir()):
        bad = unguarded_senders(tpl.read_text())
        check(not bad, f"{tpl.name}: senders pieces only under `if .Values.senders.enabled`"
              + (f" (unguarded: {bad})" if bad else ""))

    example = yaml.safe_load((chart / "examples/senders-values.yaml").read_text())
    merged = deep_merge(values, example)
    errors = sorted(v.iter_errors(merged), key=lambda e: list(e.path))
    for e in errors:
        print(f"       examples/senders-values.yaml {'/'.join(map(str, e.path)) or '(root)'}: {e.message}")
    check(not errors, "examples/senders-values.yaml (over values.yaml) validates against values.schema.json")
    s = merged.get("senders", {})
    check(s.get("enabled") is True, "examples/senders-values.yaml: senders.enabled")
    f = s.get("file")
    doc = {"version": 1, "senders": f} if isinstance(f, list) else yaml.safe_load(f or "")
    names = senders_file(doc, "examples/senders-values.yaml senders.file")
    secrets = s.get("secrets") or {}
    missing = [n for n in names if not (secrets.get(n) or {}).get("existingSecret") or not (secrets.get(n) or {}).get("key")]
    check(not missing, "examples/senders-values.yaml: every env var senders.file names has senders.secrets"
          " {existingSecret, key}" + (f" (missing: {missing})" if missing else ""))
    unused = sorted(set(secrets) - set(names))
    check(not unused, f"examples/senders-values.yaml: senders.secrets names only the file's env vars ({unused or 'none'} extra)")
    k8s_file = yaml.safe_load((ROOT / "k8s/optional/senders/senders.yaml").read_text())
    check(doc == k8s_file, "examples/senders-values.yaml senders.file = k8s/optional/senders/senders.yaml")

    # The schema refuses what would render pods that stop at start-up.
    good = example["senders"]
    one = good["file"][0]
    bad = [
        ("enabled without a file", {**good, "file": ""}),
        ("enabled without secrets", {**good, "secrets": {}}),
        ("a secret without its key", {**good, "secrets": {**good["secrets"], "SENDER_A1_TOKEN": {"existingSecret": "x"}}}),
        ("a secret named like a Warden variable",
         {**good, "secrets": {**good["secrets"], "PLATFORM_ACCESS_TOKEN": {"existingSecret": "x", "key": "y"}}}),
        ("a numeric phone_number_id", {**good, "file": [{**one, "phone_number_id": 111}]}),
        ("a bad sender id", {**good, "file": [{**one, "id": "A 1"}]}),
        ("a token in the file", {**good, "file": [{**one, "access_token": "t"}]}),
        ("a misspelt key", {**good, "secretz": {}}),
    ]
    for what, value in bad:
        check(not v.is_valid({**values, "senders": value}), f"values.schema.json refuses senders with {what}")

    # One path everywhere: SENDERS_PATH = the mount directory + the ConfigMap's key.
    helpers = (chart / "templates/_helpers.tpl").read_text()
    env = re.search(r"- name: SENDERS_PATH\n\s+value: (\S+)", helpers)
    check(env is not None and env.group(1) == SENDERS_PATH, f"_helpers.tpl warden.sendersEnv: SENDERS_PATH = {SENDERS_PATH}")
    check(re.search(r'- name: senders\n\s+configMap:\n\s+name: \{\{ include "warden.sendersName" \. \}\}', helpers)
          is not None, "_helpers.tpl warden.podCommon: volume senders from ConfigMap warden.sendersName")
    check(re.search(r"secretKeyRef: \{name: \{\{ \$ref\.existingSecret \| quote \}\}, key: \{\{ \$ref\.key \| quote \}\}\}",
                    helpers) is not None, "_helpers.tpl warden.sendersEnv: each senders.secrets entry is a secretKeyRef")
    for name in ["deployments.yaml", "mcp-gateway.yaml"]:
        text = (chart / "templates" / name).read_text()
        mount = re.search(r"- name: senders\n\s+mountPath: (\S+)\n\s+readOnly: true", text)
        check(mount is not None and mount.group(1) == str(Path(SENDERS_PATH).parent),
              f"{name}: the senders volume mounted read-only at {Path(SENDERS_PATH).parent}")
        check('include "warden.sendersEnv"' in text and "checksum/senders" in text,
              f"{name}: SENDERS_PATH and the senders env vars; pods roll when the file changes")
    cm = (chart / "templates/senders.yaml").read_text()
    check(re.search(r'name: \{\{ include "warden.sendersName" \. \}\}', cm) is not None
          and f"  {Path(SENDERS_PATH).name}: |" in cm,
          f"senders.yaml: ConfigMap warden.sendersName with the key {Path(SENDERS_PATH).name}")


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
    for s in ["postgres", "redis", "nats", "platform-sim", "webhook", "dispatcher", "scheduler", "console", "otel-collector"]:
        check(s in services, f"compose service {s}")
    for s in ["postgres", "redis", "nats", "platform-sim", "webhook", "dispatcher", "scheduler", "console"]:
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
    compose_senders(services)
    otel = yaml.safe_load((ROOT / "deploy/otel-collector.yaml").read_text())
    check(otel["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")
          and "debug" in otel["service"]["pipelines"]["traces"]["exporters"],
          "collector: OTLP/HTTP 4318 in, debug exporter out")


# The Warden processes of docker-compose.yml (platform-sim stands for the platform).
COMPOSE_WARDEN = ["webhook", "dispatcher", "scheduler", "mcp-http", "mcp-gateway", "console"]


def compose_senders(services):
    """deploy/compose-senders.yml, the optional override for several senders, over docker-compose.yml."""
    check(not any("SENDERS_PATH" in (s.get("environment") or {}) for s in services.values()),
          "docker-compose.yml sets no SENDERS_PATH (one sender by default)")
    over = yaml.safe_load((ROOT / "deploy/compose-senders.yml").read_text())
    osvc = over.get("services", {})
    check(sorted(osvc) == sorted(COMPOSE_WARDEN), f"compose-senders.yml covers every Warden service ({', '.join(COMPOSE_WARDEN)})")
    check(set(osvc) <= set(services), "compose-senders.yml names only services of docker-compose.yml")
    sources, names = {}, None
    for name, svc in sorted(osvc.items()):
        env = svc.get("environment") or {}
        mounts = [re.fullmatch(r"(?:\$\{SENDERS_FILE:-([^}]+)\}|([^:$]+)):([^:]+):ro", v) for v in svc.get("volumes", [])]
        mounts = [m for m in mounts if m and m.group(3) == env.get("SENDERS_PATH")]
        check(env.get("SENDERS_PATH") == SENDERS_PATH and len(mounts) == 1,
              f"compose-senders {name}: SENDERS_PATH = {SENDERS_PATH}, the senders file mounted there read-only")
        if len(mounts) != 1:
            continue
        src = mounts[0].group(1) or mounts[0].group(2)
        sources[name] = src
        if names is None and (ROOT / src).is_file():
            names = senders_file(yaml.safe_load((ROOT / src).read_text()), src)
        missing = [n for n in names or [] if n not in env]
        check(not missing, f"compose-senders {name}: every env var the senders file names is set"
              + (f" (missing: {missing})" if missing else ""))
        base_env = services.get(name, {}).get("environment") or {}
        check(not set(env) & set(base_env), f"compose-senders {name}: adds variables, overrides none of docker-compose.yml")
    srcs = sorted(set(sources.values()))
    check(len(srcs) == 1 and (ROOT / srcs[0]).is_file(), f"compose-senders: one senders file for every process, and it exists ({srcs})")


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
