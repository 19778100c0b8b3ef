// A renderer for the subset of kustomize that k8s/ uses, so the tests can build the manifests
// offline with packages from npm only (kustomize itself is not packaged for Debian 12 or npm).
// `kubectl apply -k` (kustomize v5) is what users run; tests/integration/deploy_k8s_manifests.sh checks
// that this renderer's output equals `kubectl kustomize` wherever kubectl is installed.
//
// Supported kustomization fields (anything else is an error, so a manifest that starts using a
// new feature fails here instead of being rendered wrong):
//   apiVersion, kind, resources (YAML files, or directories with a kustomization.yaml),
//   namespace (set on every object), configMapGenerator (name, files [KEY=]PATH, options.labels,
//   options.disableNameSuffixHash; the name gets kustomize's content hash suffix, and
//   references to it from pod templates follow), images (name, newName, newTag) and patches
//   (RFC 6902 JSON patches, inline or from a file, with a target kind and name).
//
// Usage: node render.mjs DIR  -> the objects as one YAML stream on stdout.
import { createHash } from "node:crypto";
import { readFileSync, existsSync, statSync } from "node:fs";
import { join, resolve, dirname, basename } from "node:path";
import YAML from "yaml";

const KUSTOMIZATION_FIELDS = new Set(["apiVersion", "kind", "resources", "namespace",
    "configMapGenerator", "images", "patches"]);
const GENERATOR_FIELDS = new Set(["name", "files", "options"]);
const OPTION_FIELDS = new Set(["labels", "disableNameSuffixHash"]);

function fail(msg) {
    throw new Error(msg);
}

function readYamlStream(path) {
    return YAML.parseAllDocuments(readFileSync(path, "utf8"))
        .map((doc) => {
            if (doc.errors.length) fail(`${path}: ${doc.errors[0].message}`);
            return doc.toJS();
        })
        .filter((o) => o !== null && o !== undefined);
}

// kustomize's name hash of a ConfigMap: sha256 over Go's json.Marshal of {data, kind, name}
// (keys sorted, <, > and & escaped), the first 10 hex digits with 0 1 3 a e swapped for g h k m t.
// kustomize v5 looks the name up with a path its lookup does not split, finds nothing and
// hashes "" as the name: so does this (checked against `kubectl kustomize`, kustomize v5.5).
function goJson(value) {
    if (value === null || typeof value !== "object") {
        return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g,
            (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
    }
    if (Array.isArray(value)) return "[" + value.map(goJson).join(",") + "]";
    const keys = Object.keys(value).sort();
    return "{" + keys.map((k) => goJson(k) + ":" + goJson(value[k])).join(",") + "}";
}

function configMapHash(cm) {
    const m = { kind: "ConfigMap", name: "", data: cm.data || {} };
    const hex = createHash("sha256").update(goJson(m)).digest("hex").slice(0, 10);
    const swap = { 0: "g", 1: "h", 3: "k", a: "m", e: "t" };
    return [...hex].map((c) => swap[c] || c).join("");
}

function generateConfigMap(dir, gen) {
    for (const k of Object.keys(gen)) if (!GENERATOR_FIELDS.has(k)) fail(`${dir}: configMapGenerator.${k} is not supported`);
    const opts = gen.options || {};
    for (const k of Object.keys(opts)) if (!OPTION_FIELDS.has(k)) fail(`${dir}: configMapGenerator options.${k} is not supported`);
    const data = {};
    for (const spec of gen.files || []) {
        const eq = spec.indexOf("=");
        const key = eq >= 0 ? spec.slice(0, eq) : basename(spec);
        const path = resolve(dir, eq >= 0 ? spec.slice(eq + 1) : spec);
        if (!path.startsWith(resolve(dir) + "/")) fail(`${dir}: ${spec} is outside the kustomization (kustomize refuses it)`);
        data[key] = readFileSync(path, "utf8");
    }
    const cm = { apiVersion: "v1", kind: "ConfigMap", metadata: { name: gen.name }, data };
    if (opts.labels) cm.metadata.labels = { ...opts.labels };
    return { cm, hashed: !opts.disableNameSuffixHash };
}

// Pod specs of the workload kinds k8s/ uses, for the name references and the images.
function podSpecs(obj) {
    const t = obj.spec && obj.spec.template;
    if (["Deployment", "StatefulSet", "DaemonSet", "Job", "ReplicaSet"].includes(obj.kind) && t && t.spec) return [t.spec];
    if (obj.kind === "Pod" && obj.spec) return [obj.spec];
    return [];
}

function containersOf(spec) {
    return [...(spec.initContainers || []), ...(spec.containers || [])];
}

function renameConfigMapRefs(objects, renames) {
    const rename = (ref) => {
        if (ref && renames.has(ref.name)) ref.name = renames.get(ref.name);
    };
    for (const obj of objects) {
        for (const spec of podSpecs(obj)) {
            for (const v of spec.volumes || []) {
                rename(v.configMap);
                for (const s of (v.projected && v.projected.sources) || []) rename(s.configMap);
            }
            for (const c of containersOf(spec)) {
                for (const e of c.envFrom || []) rename(e.configMapRef);
                for (const e of c.env || []) rename(e.valueFrom && e.valueFrom.configMapKeyRef);
            }
        }
    }
}

function applyImages(objects, images) {
    for (const img of images) {
        for (const k of Object.keys(img)) if (!["name", "newName", "newTag"].includes(k)) fail(`images.${k} is not supported`);
        for (const obj of objects) {
            for (const spec of podSpecs(obj)) {
                for (const c of containersOf(spec)) {
                    const m = /^([^:@]+(?::\d+\/[^:@]+)?)(?::([^@]+))?(@.+)?$/.exec(c.image || "");
                    if (!m || m[1] !== img.name) continue;
                    c.image = (img.newName || m[1]) + (img.newTag ? ":" + img.newTag : m[2] ? ":" + m[2] : "") + (img.newTag ? "" : m[3] || "");
                }
            }
        }
    }
}

// RFC 6901 pointer: the parent container and the last token.
function locate(doc, pointer) {
    if (!pointer.startsWith("/")) fail(`patch path ${pointer} is not a JSON pointer`);
    const tokens = pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
    let parent = doc;
    for (const t of tokens.slice(0, -1)) {
        parent = Array.isArray(parent) ? parent[Number(t)] : parent[t];
        if (parent === undefined || parent === null) fail(`patch path ${pointer}: ${t} does not exist`);
    }
    return [parent, tokens[tokens.length - 1]];
}

function applyJsonPatch(doc, ops, where) {
    for (const op of ops) {
        const [parent, key] = locate(doc, op.path);
        const isArr = Array.isArray(parent);
        const idx = key === "-" ? parent.length : Number(key);
        switch (op.op) {
        case "add":
            if (isArr) parent.splice(idx, 0, structuredClone(op.value));
            else parent[key] = structuredClone(op.value);
            break;
        case "replace":
            if (isArr ? idx >= parent.length : !(key in parent)) fail(`${where}: replace ${op.path}: nothing there`);
            if (isArr) parent[idx] = structuredClone(op.value);
            else parent[key] = structuredClone(op.value);
            break;
        case "remove":
            if (isArr ? idx >= parent.length : !(key in parent)) fail(`${where}: remove ${op.path}: nothing there`);
            if (isArr) parent.splice(idx, 1);
            else delete parent[key];
            break;
        default:
            fail(`${where}: patch op ${op.op} is not supported`);
        }
    }
}

function applyPatches(dir, objects, patches) {
    for (const p of patches) {
        for (const k of Object.keys(p)) if (!["target", "patch", "path"].includes(k)) fail(`${dir}: patches[].${k} is not supported`);
        const text = p.patch !== undefined ? p.patch : readFileSync(resolve(dir, p.path), "utf8");
        const ops = YAML.parse(text);
        if (!Array.isArray(ops)) fail(`${dir}: only JSON 6902 patches (a list of operations) are supported`);
        const t = p.target || {};
        for (const k of Object.keys(t)) if (!["kind", "name"].includes(k)) fail(`${dir}: patch target.${k} is not supported`);
        const hits = objects.filter((o) => (!t.kind || o.kind === t.kind) && (!t.name || o.metadata.name === t.name));
        if (!hits.length) fail(`${dir}: patch target ${t.kind}/${t.name} matches nothing`);
        for (const o of hits) applyJsonPatch(o, ops, `${dir}: patch of ${o.kind}/${o.metadata.name}`);
    }
}

// Render one kustomization directory: its resources, then its own transformations.
export function render(dir) {
    dir = resolve(dir);
    const kfile = join(dir, "kustomization.yaml");
    if (!existsSync(kfile)) fail(`${dir}: no kustomization.yaml`);
    const k = YAML.parse(readFileSync(kfile, "utf8"));
    for (const key of Object.keys(k)) if (!KUSTOMIZATION_FIELDS.has(key)) fail(`${kfile}: ${key} is not supported by this renderer`);
    let objects = [];
    for (const r of k.resources || []) {
        const path = resolve(dir, r);
        objects = objects.concat(statSync(path).isDirectory() ? render(path) : readYamlStream(path));
    }
    const renames = new Map();
    for (const gen of k.configMapGenerator || []) {
        const { cm, hashed } = generateConfigMap(dir, gen);
        if (hashed) {
            const name = `${gen.name}-${configMapHash(cm)}`;
            renames.set(gen.name, name);
            cm.metadata.name = name;
        }
        objects.push(cm);
    }
    renameConfigMapRefs(objects, renames);
    if (k.namespace) {
        for (const o of objects) if (o.kind !== "Namespace") o.metadata.namespace = k.namespace;
    }
    applyImages(objects, k.images || []);
    applyPatches(dir, objects, k.patches || []);
    return objects;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
    const dir = process.argv[2];
    if (!dir) {
        console.error("usage: node render.mjs KUSTOMIZATION_DIR");
        process.exit(2);
    }
    try {
        process.stdout.write(render(dir).map((o) => YAML.stringify(o)).join("---\n"));
    } catch (e) {
        console.error(`render: ${e.message}`);
        process.exit(1);
    }
}
