// Validation and invariants of the rendered k8s/ manifests, offline.
//
//   node check.mjs RENDERED.yaml SOURCE_DIR WARREN_BIN OUT_DIR
//
// 1. Every object is validated against its schema: the Kubernetes OpenAPI schemas (npm
//    kubernetes-models, Kubernetes 1.27), KEDA's and the Prometheus operator's CRD schemas
//    (@kubernetes-models/keda, @kubernetes-models/prometheus-operator), and for the RabbitMQ
//    operators' kinds, which no npm package models, a schema of the fields k8s/rabbitmq uses
//    (RABBITMQ_SCHEMAS below, unknown fields refused). These schemas catch wrong types, missing
//    required fields and bad enum values; the Kubernetes ones allow unknown fields, which the
//    invariants below cover where it matters.
// 2. Invariants between the objects and warren itself: probes point at paths warren serves on the
//    port its listen setting names, every WARREN__ variable names a real configuration key
//    (`warren config check` decides), selectors match labels, references resolve, the grace
//    periods cover the drain with the configuration the pods really get (the ConfigMap plus their
//    environment), security contexts and resources are set.
// Writes OUT_DIR/rules.yaml (the PrometheusRule's groups, for promtool) and OUT_DIR/keda.sql
// (the KEDA query, run against the schema by the shell test). Exit 1 with every problem listed.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync, existsSync, mkdtempSync } from "node:fs";
import { join, dirname, basename } from "node:path";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import YAML from "yaml";
import Ajv from "ajv";

const require = createRequire(import.meta.url);
const [renderedPath, sourceDir, warrenBin, outDir] = process.argv.slice(2);
if (!outDir) {
    console.error("usage: node check.mjs RENDERED.yaml SOURCE_DIR WARREN_BIN OUT_DIR");
    process.exit(2);
}

// Keys the manifests may use before a branch adds them to the key table: `warren config check`
// does not know them yet, so they are taken as written; once it does, this check fails and asks
// for the key to be removed here. Empty since the HTTP API (issue 9) added api.listen, api.keys
// and worker.http_listen.
const PENDING_KEYS = new Set([]);
// The paths warren serves on its listen address (issue 9): liveness, readiness, metrics.
const SERVED_PATHS = { liveness: "/livez", readiness: "/readyz", metrics: "/metrics" };
const LISTEN_KEY = { executor: "api.listen", worker: "worker.http_listen" };
// The Secret every deployment creates (docs/kubernetes.md) and the keys it holds.
const SECRET = { name: "warren-secrets", keys: new Set(["database-url", "amqp-url", "api-keys", "signing-key"]) };
// The one container that does not run warren: an init container copying the Secret's signing
// key into the daemons' key file as their user (a Secret volume's files are root's).
const KEY_COPY = { name: "signing-key", secretKey: "signing-key", mode: "0600" };
const WORKER_REPORT_GIVE_UP_S = 10; // docs/worker.md, Shutdown

const problems = [];
const problem = (where, msg) => problems.push(`${where}: ${msg}`);
const objects = YAML.parseAllDocuments(readFileSync(renderedPath, "utf8")).map((d) => d.toJS()).filter(Boolean);
const id = (o) => `${o.kind}/${o.metadata && o.metadata.name}`;
const byKind = (kind) => objects.filter((o) => o.kind === kind);
const find = (kind, name) => objects.find((o) => o.kind === kind && o.metadata.name === name);

// ---- 1. schemas -----------------------------------------------------------------------------
const quantity = { type: "string", pattern: "^[0-9]+(\\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$" };
const resources = {
    type: "object", additionalProperties: false,
    properties: { requests: { type: "object", additionalProperties: quantity }, limits: { type: "object", additionalProperties: quantity } },
};
const meta = { type: "object", required: ["name"], properties: { name: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" } } };
const RABBITMQ_SCHEMAS = {
    // rabbitmq.com/v1beta1 RabbitmqCluster (cluster operator): the fields k8s/rabbitmq uses.
    RabbitmqCluster: {
        type: "object", required: ["apiVersion", "kind", "metadata", "spec"],
        properties: {
            apiVersion: { const: "rabbitmq.com/v1beta1" }, kind: { const: "RabbitmqCluster" }, metadata: meta,
            spec: {
                type: "object", additionalProperties: false,
                properties: {
                    replicas: { type: "integer", minimum: 0 },
                    image: { type: "string" },
                    rabbitmq: {
                        type: "object", additionalProperties: false,
                        properties: {
                            additionalPlugins: { type: "array", items: { type: "string", pattern: "^\\w+$" }, maxItems: 100 },
                            additionalConfig: { type: "string", maxLength: 100000 },
                            advancedConfig: { type: "string", maxLength: 100000 },
                            envConfig: { type: "string", maxLength: 100000 },
                        },
                    },
                    resources,
                    persistence: {
                        type: "object", additionalProperties: false,
                        properties: { storageClassName: { type: "string" }, storage: quantity },
                    },
                },
            },
        },
    },
    // rabbitmq.com/v1beta1 Policy (messaging topology operator).
    Policy: {
        type: "object", required: ["apiVersion", "kind", "metadata", "spec"],
        properties: {
            apiVersion: { const: "rabbitmq.com/v1beta1" }, kind: { const: "Policy" }, metadata: meta,
            spec: {
                type: "object", additionalProperties: false,
                required: ["name", "pattern", "definition", "rabbitmqClusterReference"],
                properties: {
                    name: { type: "string" }, vhost: { type: "string" }, pattern: { type: "string" },
                    applyTo: { enum: ["queues", "exchanges", "all", "classic_queues", "quorum_queues", "streams"] },
                    priority: { type: "integer" },
                    definition: { type: "object", minProperties: 1 },
                    rabbitmqClusterReference: {
                        type: "object", additionalProperties: false, required: ["name"],
                        properties: { name: { type: "string" }, namespace: { type: "string" } },
                    },
                },
            },
        },
    },
};
const ajv = new Ajv({ allErrors: true, strict: true });
const rabbitValidators = Object.fromEntries(Object.entries(RABBITMQ_SCHEMAS).map(([k, s]) => [k, ajv.compile(s)]));

function modelOf(o) {
    const [group, version] = o.apiVersion.includes("/") ? o.apiVersion.split("/") : [null, o.apiVersion];
    if (group === "keda.sh") return require(`@kubernetes-models/keda/keda.sh/${version}/${o.kind}`)[o.kind];
    if (group === "monitoring.coreos.com") return require(`@kubernetes-models/prometheus-operator/monitoring.coreos.com/${version}/${o.kind}`)[o.kind];
    return require(`kubernetes-models/${group ? group + "/" : ""}${version}/${o.kind}`)[o.kind];
}

for (const o of objects) {
    if (!o.apiVersion || !o.kind || !o.metadata || !o.metadata.name) {
        problem(JSON.stringify(o).slice(0, 80), "no apiVersion, kind or metadata.name");
        continue;
    }
    if (o.apiVersion === "rabbitmq.com/v1beta1") {
        const v = rabbitValidators[o.kind];
        if (!v) problem(id(o), "no schema for this rabbitmq.com kind");
        else if (!v(o)) problem(id(o), ajv.errorsText(v.errors));
        continue;
    }
    let Model;
    try {
        Model = modelOf(o);
    } catch {
        problem(id(o), `no schema known for ${o.apiVersion} ${o.kind}`);
        continue;
    }
    try {
        new Model(o).validate();
    } catch (e) {
        problem(id(o), `schema: ${e.message}`);
    }
}

// ---- 2. invariants --------------------------------------------------------------------------
const workloads = objects.filter((o) => ["Deployment", "StatefulSet"].includes(o.kind));
const labelsMatch = (selector, labels) =>
    Object.entries(selector || {}).every(([k, v]) => labels && labels[k] === v) && Object.keys(selector || {}).length > 0;
const exprsMatch = (exprs, labels) =>
    (exprs || []).every((e) => (e.operator === "In" ? e.values.includes(labels[e.key]) : e.operator === "Exists" ? e.key in labels : false));
const podLabels = (w) => w.spec.template.metadata.labels || {};
const containers = (w) => [...(w.spec.template.spec.initContainers || []), ...w.spec.template.spec.containers];
const subcommand = (c) => (c.args || [])[0];

// The configuration keys the binary knows, and its effective configuration for a container.
const cleanEnv = { PATH: process.env.PATH };
const knownKeys = new Set(execFileSync(warrenBin, ["config", "check"], { env: cleanEnv, encoding: "utf8" })
    .split("\n").map((l) => l.split(/\s+/)[0]).filter(Boolean));
for (const k of PENDING_KEYS) {
    if (knownKeys.has(k)) problem("tests/k8s/check.mjs", `${k} is in the key table now: remove it from PENDING_KEYS`);
}
const keyOfEnv = (name) => name.slice("WARREN__".length).toLowerCase().split("__").join(".");
const scratch = mkdtempSync(join(tmpdir(), "warren-k8s-"));

function configFileOf(w, c) {
    const args = c.args || [];
    const i = args.indexOf("-c");
    if (i < 0) return problem(`${id(w)} ${c.name}`, "no -c FILE in args: the ConfigMap would not be read"), null;
    const path = args[i + 1];
    const mount = (c.volumeMounts || []).find((m) => m.mountPath === dirname(path));
    const vol = mount && (w.spec.template.spec.volumes || []).find((v) => v.name === mount.name);
    const cm = vol && vol.configMap && find("ConfigMap", vol.configMap.name);
    if (!cm || !cm.data || !(basename(path) in cm.data)) return problem(`${id(w)} ${c.name}`, `${path} is not a key of a mounted ConfigMap`), null;
    return cm.data[basename(path)];
}

function effectiveConfig(w, c) {
    const text = configFileOf(w, c);
    if (text === null) return null;
    const file = join(scratch, `${w.metadata.name}-${c.name}.conf`);
    writeFileSync(file, text);
    const env = { ...cleanEnv };
    const literal = {};
    for (const e of c.env || []) {
        if (!e.name.startsWith("WARREN__") || e.value === undefined) continue;
        literal[keyOfEnv(e.name)] = e.value;
        if (!PENDING_KEYS.has(keyOfEnv(e.name))) env[e.name] = e.value;
    }
    let out;
    try {
        out = execFileSync(warrenBin, ["config", "check", "-c", file], { env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    } catch (e) {
        problem(`${id(w)} ${c.name}`, `warren config check refuses the pod's configuration: ${(e.stderr || "").trim()}`);
        return null;
    }
    const cfg = {};
    for (const line of out.split("\n")) {
        const m = /^(\S+)\s+= (.*?)  # (?:default|file|env)\b.*$/.exec(line);
        if (m) cfg[m[1]] = m[2].replace(/^"|"$/g, "");
    }
    return { ...cfg, ...Object.fromEntries(Object.entries(literal).filter(([k]) => PENDING_KEYS.has(k))) };
}

const num = (cfg, k) => {
    const v = Number(cfg[k]);
    if (cfg[k] === undefined || Number.isNaN(v)) throw new Error(`${k} is not a number in the effective configuration`);
    return v;
};
function longestHandlerTimeout(cfg) {
    const per = (cfg["worker.action_timeouts"] || "").split(",").filter(Boolean).map((p) => Number(p.split("=")[1]));
    return Math.max(num(cfg, "worker.default_timeout_s"), ...per);
}

// What is wrong with how container c of w gets its signing key file keyFile: mounted read-only
// from a memory volume into which an init container that runs before it installs the Secret's
// signing-key with mode 0600, as the pod's (the daemon's) user.
function signingKeyProblems(w, c, keyFile) {
    const spec = w.spec.template.spec;
    const mount = (c.volumeMounts || []).find((m) => m.mountPath === dirname(keyFile));
    const vol = mount && (spec.volumes || []).find((v) => v.name === mount.name);
    if (!vol || !vol.emptyDir || vol.emptyDir.medium !== "Memory" || mount.readOnly !== true)
        return [`${dirname(keyFile)} is not a read-only mount of a memory volume holding ${keyFile}`];
    const init = (spec.initContainers || []).find((i) => i.name === KEY_COPY.name);
    const cmd = (init && init.command) || [];
    const into = init && (init.volumeMounts || []).find((m) => m.name === vol.name);
    const [src, dst] = cmd.slice(-2);
    const srcMount = init && (init.volumeMounts || []).find((m) => m.mountPath === dirname(src || ""));
    const srcVol = srcMount && (spec.volumes || []).find((v) => v.name === srcMount.name);
    const item = srcVol && srcVol.secret && srcVol.secret.secretName === SECRET.name &&
        (srcVol.secret.items || []).find((it) => it.key === KEY_COPY.secretKey && it.path === basename(src));
    const out = [];
    if (!init || cmd[0] !== "/usr/bin/install" || cmd[1] !== "-m" || cmd[2] !== KEY_COPY.mode)
        out.push(`no init container ${KEY_COPY.name} running /usr/bin/install -m ${KEY_COPY.mode}`);
    else if (!into || into.mountPath !== dirname(keyFile) || dst !== keyFile)
        out.push(`init container ${KEY_COPY.name} does not install ${keyFile}`);
    else if (!item)
        out.push(`init container ${KEY_COPY.name} copies ${src}, not ${SECRET.name}/${KEY_COPY.secretKey}`);
    return out;
}

for (const w of workloads) {
    const spec = w.spec.template.spec;
    if (!labelsMatch(w.spec.selector.matchLabels, podLabels(w))) problem(id(w), "selector.matchLabels do not match the pod template's labels");
    if (spec.automountServiceAccountToken !== false) problem(id(w), "automountServiceAccountToken is not false");
    const psc = spec.securityContext || {};
    if (psc.runAsNonRoot !== true || !(psc.runAsUser > 0)) problem(id(w), "the pod does not run as a numeric non-root user");
    if (process.env.WARREN_IMAGE_UID && String(psc.runAsUser) !== process.env.WARREN_IMAGE_UID)
        problem(id(w), `runAsUser ${psc.runAsUser} is not the image's user ${process.env.WARREN_IMAGE_UID} (Dockerfile)`);
    if (!psc.seccompProfile || psc.seccompProfile.type !== "RuntimeDefault") problem(id(w), "no RuntimeDefault seccomp profile");
    for (const v of spec.volumes || []) {
        if (v.configMap && !find("ConfigMap", v.configMap.name)) problem(id(w), `volume ${v.name}: no ConfigMap ${v.configMap.name}`);
        for (const it of (v.secret && v.secret.items) || []) {
            if (v.secret.secretName !== SECRET.name || !SECRET.keys.has(it.key)) problem(id(w), `volume ${v.name}: secret ${v.secret.secretName}/${it.key} is not one of ${SECRET.name}'s documented keys`);
        }
    }
    for (const c of containers(w)) {
        const where = `${id(w)} container ${c.name}`;
        const sc = c.securityContext || {};
        if (sc.allowPrivilegeEscalation !== false) problem(where, "allowPrivilegeEscalation is not false");
        if (sc.readOnlyRootFilesystem !== true) problem(where, "the root filesystem is not read-only");
        if (!sc.capabilities || !(sc.capabilities.drop || []).includes("ALL") || (sc.capabilities.add || []).length) problem(where, "capabilities: not all dropped");
        if (sc.privileged) problem(where, "privileged");
        for (const kind of ["requests", "limits"]) {
            for (const r of ["cpu", "memory"]) if (!(c.resources && c.resources[kind] && c.resources[kind][r])) problem(where, `no ${kind}.${r}`);
        }
        for (const e of c.env || []) {
            if (e.name.startsWith("WARREN__")) {
                const key = keyOfEnv(e.name);
                if (!knownKeys.has(key) && !PENDING_KEYS.has(key)) problem(where, `${e.name} names no configuration key (${key})`);
            } else if (e.name !== "WARREN_CONFIG") {
                problem(where, `${e.name} is not a warren setting (WARREN__SECTION__KEY)`);
            }
            const ref = e.valueFrom && e.valueFrom.secretKeyRef;
            if (ref && (ref.name !== SECRET.name || !SECRET.keys.has(ref.key))) problem(where, `${e.name}: secret ${ref.name}/${ref.key} is not one of ${SECRET.name}'s documented keys`);
            if (e.valueFrom && e.valueFrom.configMapKeyRef && !find("ConfigMap", e.valueFrom.configMapKeyRef.name)) problem(where, `${e.name}: no such ConfigMap`);
        }
        if (c.command) {
            if (c.name !== KEY_COPY.name) problem(where, "runs a command, not warren (only the signing key's init container may)");
            continue;
        }
        const cfg = effectiveConfig(w, c);
        const sub = subcommand(c);
        if (!["executor", "worker", "migrate"].includes(sub)) problem(where, `args start with ${sub}, not a warren daemon or migrate`);
        if (!cfg || sub === "migrate") continue;

        // Probes: the served path, on the container port that the listen setting names.
        const listen = cfg[LISTEN_KEY[sub]] || "";
        const m = /^(.*):(\d+)$/.exec(listen);
        if (!m) {
            problem(where, `${LISTEN_KEY[sub]} is "${listen}": nothing to probe`);
        } else if (!["0.0.0.0", "::", "[::]", ""].includes(m[1])) {
            problem(where, `${LISTEN_KEY[sub]} ${listen} is not reachable from the kubelet (listen on 0.0.0.0)`);
        }
        for (const [probe, path] of [["livenessProbe", SERVED_PATHS.liveness], ["readinessProbe", SERVED_PATHS.readiness]]) {
            const p = c[probe] && c[probe].httpGet;
            if (!p) {
                problem(where, `no ${probe} (httpGet)`);
                continue;
            }
            if (p.path !== path) problem(where, `${probe} path ${p.path} is not ${path}`);
            const port = typeof p.port === "number" ? p.port : ((c.ports || []).find((cp) => cp.name === p.port) || {}).containerPort;
            if (port === undefined) problem(where, `${probe} port ${p.port} is no container port`);
            else if (m && port !== Number(m[2])) problem(where, `${probe} port ${port} is not the port of ${LISTEN_KEY[sub]} ${listen}`);
        }

        // Signing on: the key file is on a volume that the init container filled from the Secret.
        const keyFile = cfg["message_queue.signing_key_file"] || "";
        if (!keyFile) problem(where, "message_queue.signing_key_file is empty: messages are not signed");
        else signingKeyProblems(w, c, keyFile).forEach((msg) => problem(where, msg));

        // Grace periods against the drain, with the configuration this container gets.
        const grace = spec.terminationGracePeriodSeconds ?? 30;
        if (sub === "worker") {
            const longest = longestHandlerTimeout(cfg);
            const shutdown = num(cfg, "worker.shutdown_timeout_s");
            const killGrace = num(cfg, "worker.kill_grace_s");
            if (shutdown < longest) problem(where, `worker.shutdown_timeout_s ${shutdown} is below the longest handler timeout ${longest}: a drain would cut handlers short`);
            const need = Math.max(shutdown, longest) + killGrace + WORKER_REPORT_GIVE_UP_S;
            if (grace < need) problem(where, `terminationGracePeriodSeconds ${grace} < longest handler timeout ${longest} + drain (kill grace ${killGrace} + ${WORKER_REPORT_GIVE_UP_S}) = ${need}`);
            const nameEnv = (c.env || []).find((e) => e.name === "WARREN__WORKER__NAME");
            if (!nameEnv || !nameEnv.valueFrom || !nameEnv.valueFrom.fieldRef || nameEnv.valueFrom.fieldRef.fieldPath !== "metadata.name")
                problem(where, "the worker name is not the pod name (WARREN__WORKER__NAME from metadata.name)");
        } else {
            const need = Math.ceil(num(cfg, "message_queue.rabbitmq.publish_timeout_ms") / 1000) + num(cfg, "database.connect_timeout_s") + 10;
            if (grace < need) problem(where, `terminationGracePeriodSeconds ${grace} < the executor's drain bound ${need}`);
        }
    }
}

// The two workloads the issue asks for.
const executor = workloads.find((w) => containers(w).some((c) => subcommand(c) === "executor"));
const worker = workloads.find((w) => containers(w).some((c) => subcommand(c) === "worker"));
if (!executor || executor.kind !== "Deployment" || executor.spec.replicas !== 2) problem("executor", "not a Deployment with 2 replicas");
if (!worker || worker.kind !== "StatefulSet" || worker.spec.podManagementPolicy !== "Parallel") problem("worker", "not a StatefulSet with podManagementPolicy Parallel");
// Requests cover the measured RSS (docs/performance.md).
const perf = readFileSync(join(sourceDir, "docs/performance.md"), "utf8");
const measured = (label) => {
    const row = perf.split("\n").find((l) => l.startsWith(`| **${label}`));
    return row ? Math.max(...row.split("|").slice(2, -3).map(Number).filter((x) => !Number.isNaN(x))) : NaN;
};
const mib = (q) => {
    const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi)?$/.exec(q || "");
    return m ? Number(m[1]) * { Ki: 1 / 1024, Mi: 1, Gi: 1024, undefined: 1 / 1048576 }[m[2]] : NaN;
};
for (const [w, label] of [[worker, "idle worker RSS"], [executor, "executor peak RSS"]]) {
    if (!w) continue;
    const rss = measured(label);
    const c = w.spec.template.spec.containers[0];
    if (Number.isNaN(rss)) problem("docs/performance.md", `no "${label}" row to size ${id(w)} by`);
    else if (!(mib(c.resources.requests.memory) >= rss)) problem(id(w), `memory request ${c.resources.requests.memory} is below the measured ${rss} MiB`);
}

// Services select exactly the pods of one workload, on a port that workload has.
for (const s of byKind("Service")) {
    const targets = workloads.filter((w) => labelsMatch(s.spec.selector, podLabels(w)));
    if (targets.length !== 1) {
        problem(id(s), `selects ${targets.length} workloads`);
        continue;
    }
    for (const p of s.spec.ports) {
        const ok = containers(targets[0]).some((c) => (c.ports || []).some((cp) => cp.name === p.targetPort || cp.containerPort === p.targetPort));
        if (!ok) problem(id(s), `targetPort ${p.targetPort} is no port of ${id(targets[0])}`);
    }
}
for (const w of byKind("StatefulSet")) {
    const s = find("Service", w.spec.serviceName);
    if (!s || s.spec.clusterIP !== "None" || !labelsMatch(s.spec.selector, podLabels(w))) problem(id(w), `serviceName ${w.spec.serviceName} is not a headless Service selecting it`);
}
for (const p of byKind("PodDisruptionBudget")) {
    const n = workloads.filter((w) => labelsMatch(p.spec.selector.matchLabels, podLabels(w))).length;
    if (n !== 1) problem(id(p), `selects ${n} workloads`);
}
for (const sm of byKind("ServiceMonitor")) {
    const services = byKind("Service").filter((s) => labelsMatch(sm.spec.selector.matchLabels, s.metadata.labels || {}) && exprsMatch(sm.spec.selector.matchExpressions, s.metadata.labels || {}));
    const names = services.map((s) => s.metadata.name).sort().join(",");
    if (names !== [executor, worker].filter(Boolean).map((w) => w.metadata.name).sort().join(",")) problem(id(sm), `selects the Services [${names}], not the executor's and the workers'`);
    for (const e of sm.spec.endpoints) {
        if (e.path !== SERVED_PATHS.metrics) problem(id(sm), `endpoint path ${e.path} is not ${SERVED_PATHS.metrics}`);
        for (const s of services) if (!s.spec.ports.some((p) => p.name === e.port)) problem(id(sm), `Service ${s.metadata.name} has no port ${e.port}`);
    }
}
for (const so of byKind("ScaledObject")) {
    const t = so.spec.scaleTargetRef;
    if (!find(t.kind || "Deployment", t.name) || t.name !== (worker && worker.metadata.name)) problem(id(so), `scaleTargetRef ${t.kind}/${t.name} is not the worker StatefulSet`);
    for (const tr of so.spec.triggers) {
        if (tr.authenticationRef && !find("TriggerAuthentication", tr.authenticationRef.name)) problem(id(so), `no TriggerAuthentication ${tr.authenticationRef.name}`);
        if (tr.type === "postgresql") writeFileSync(join(outDir, "keda.sql"), tr.metadata.query + "\n");
    }
}
for (const ta of byKind("TriggerAuthentication")) {
    for (const r of ta.spec.secretTargetRef || []) {
        if (r.name !== SECRET.name || !SECRET.keys.has(r.key)) problem(id(ta), `secret ${r.name}/${r.key} is not one of ${SECRET.name}'s documented keys`);
    }
}
for (const p of byKind("Policy")) {
    if (!find("RabbitmqCluster", p.spec.rabbitmqClusterReference.name)) problem(id(p), `no RabbitmqCluster ${p.spec.rabbitmqClusterReference.name}`);
    const unsafe = Object.keys(p.spec.definition).filter((k) => /^(message-ttl|max-length|max-length-bytes|expires|overflow|dead-letter-)/.test(k));
    if (unsafe.length) problem(id(p), `sets ${unsafe.join(", ")}, which conflict with warren's queue arguments (docs/rabbitmq.md)`);
}
const rmq = byKind("RabbitmqCluster")[0];
for (const plugin of ["rabbitmq_management", "rabbitmq_prometheus"]) {
    if (!rmq || !rmq.spec.rabbitmq.additionalPlugins.includes(plugin)) problem("RabbitmqCluster", `no ${plugin}`);
}

// The ConfigMap is conf/warren.conf.
const confMaps = byKind("ConfigMap").filter((cm) => cm.data && "warren.conf" in cm.data);
if (confMaps.length !== 1 || confMaps[0].data["warren.conf"] !== readFileSync(join(sourceDir, "conf/warren.conf"), "utf8"))
    problem("ConfigMap warren-config", "its warren.conf is not conf/warren.conf (cp conf/warren.conf k8s/base/)");

// Monitoring: the rules for promtool; the dashboard's topics; docs/metrics.md's alerts.
const rules = byKind("PrometheusRule");
if (rules.length !== 1) problem("PrometheusRule", `${rules.length} found`);
else writeFileSync(join(outDir, "rules.yaml"), YAML.stringify({ groups: rules[0].spec.groups }));
const alerts = new Set(rules.flatMap((r) => r.spec.groups.flatMap((g) => g.rules.map((x) => x.alert))));
const dashboards = byKind("ConfigMap").filter((cm) => cm.metadata.labels && cm.metadata.labels.grafana_dashboard === "1");
if (dashboards.length !== 1) problem("Grafana dashboard", `${dashboards.length} ConfigMaps labelled grafana_dashboard`);
for (const cm of dashboards) {
    for (const [file, text] of Object.entries(cm.data)) {
        let d;
        try {
            d = JSON.parse(text);
        } catch (e) {
            problem(`${id(cm)} ${file}`, `not JSON: ${e.message}`);
            continue;
        }
        const exprs = d.panels.flatMap((p) => p.targets.map((t) => t.expr)).join("\n");
        for (const [topic, metric] of [["executions", "warren_execution_run_seconds"], ["backlog", "warren_executions_backlog"],
            ["dead letters", "warren_dead_letters_total"], ["breakers", "warren_breaker_state"], ["workers", "warren_workers_live"]]) {
            if (!exprs.includes(metric)) problem(`${id(cm)} ${file}`, `no panel on ${topic} (${metric})`);
        }
    }
}
const metricsDoc = join(sourceDir, "docs/metrics.md");
if (existsSync(metricsDoc)) {
    const doc = readFileSync(metricsDoc, "utf8");
    for (const [, name] of doc.matchAll(/alert:\s*([A-Za-z0-9_]+)/g)) {
        if (!alerts.has(name)) problem("PrometheusRule", `lacks docs/metrics.md's alert ${name}`);
    }
    const used = new Set([...YAML.stringify(rules.map((r) => r.spec)).matchAll(/\bwarren_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|count|sum)$/, "")));
    for (const metric of used) if (!doc.includes(metric)) problem("PrometheusRule", `${metric} is not in docs/metrics.md`);
} else {
    console.log("check: docs/metrics.md absent (issue 9): the alerts are not compared with it yet");
}

if (problems.length) {
    console.error(problems.map((p) => `k8s: ${p}`).join("\n"));
    process.exit(1);
}
console.log(`check: ${objects.length} objects valid; invariants hold (pending keys: ${[...PENDING_KEYS].join(", ") || "none"})`);
