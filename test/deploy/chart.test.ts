// The deployment recipes under deploy/, checked offline:
// - the Helm chart: `helm lint`, `helm template` with the least real values (ci/default-values.yaml) and with every
//   optional part on (ci/all-features-values.yaml); the Kubernetes resources validated with kubernetes-validate
//   (PyPI; the schemas ship inside the package), the KEDA ScaledObject and the ServiceMonitor against the small
//   hand-kept JSON schemas in deploy/schemas/ (NOT the upstream CRD schemas); terminationGracePeriodSeconds >=
//   --shutdown-timeout + --poll-for for several settings;
// - the ECS task definition and autoscaling template, the health-check one-liners (run against a local server),
//   the Dockerfile's HEALTHCHECK;
// - the Grafana and CloudWatch dashboards: valid JSON, and every metric they name exists in src/core/telemetry/metric-names.ts.
//
//   scripts/helm.sh ensure && scripts/helm.sh ensure-kv && node --test test/deploy/chart.test.ts
//
// Tools: WORKERLESS_HELM and WORKERLESS_KUBERNETES_VALIDATE (scripts/test.sh sets both), else the paths
// scripts/helm.sh builds into ($WORKERLESS_CACHE_DIR, default ~/.cache/workerless). Without them, the chart
// tests are skipped with a message saying how to get them; the JSON checks still run.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { parseAllDocuments } from 'yaml';
import { ALL_METRICS } from '../../src/core/telemetry/metric-names.ts';
import { collectOptions } from '../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../src/config/config.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const chart = join(root, 'deploy/helm/workerless');
const cacheDir = process.env['WORKERLESS_CACHE_DIR'] ?? join(homedir(), '.cache/workerless');
const helm = process.env['WORKERLESS_HELM'] ?? join(cacheDir, 'bin/helm');
const kubernetesValidate = process.env['WORKERLESS_KUBERNETES_VALIDATE'] ?? join(cacheDir, 'kv-venv/bin/kubernetes-validate');
const venvPython = join(dirname(kubernetesValidate), 'python');
const haveHelm = existsSync(helm);
const haveValidator = existsSync(kubernetesValidate) && existsSync(venvPython);
const noHelm = haveHelm ? false : `helm not found at ${helm}: run scripts/helm.sh ensure (or scripts/test.sh deploy)`;
const noValidator =
  haveHelm && haveValidator ? false : noHelm || `kubernetes-validate not found at ${kubernetesValidate}: run scripts/helm.sh ensure-kv`;

const work = mkdtempSync(join(tmpdir(), 'workerless-deploy-'));
after(() => rmSync(work, { recursive: true, force: true }));

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: unknown;
} & Record<string, unknown>;
// Loose shapes of what the tests read from the rendered Deployment.
interface EnvVar {
  name: string;
  value?: string;
}
interface Container {
  image: string;
  env: EnvVar[];
  ports: { name: string; containerPort: number }[];
  livenessProbe?: { httpGet: { path: string; port: string } };
  readinessProbe?: { httpGet: { path: string; port: string } };
  securityContext: { readOnlyRootFilesystem: boolean; allowPrivilegeEscalation: boolean };
}
interface PodSpec {
  terminationGracePeriodSeconds: number;
  serviceAccountName: string;
  securityContext: { runAsNonRoot: boolean; runAsUser: number };
  containers: Container[];
}
interface DeploymentSpec {
  replicas?: number;
  template: { metadata: { annotations?: Record<string, string> }; spec: PodSpec };
}

function helmRun(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(helm, args, { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template` with the chart's ci/<file> and extra --set flags; the parsed documents. */
function render(valuesFile: string | null, set: string[] = []): Manifest[] {
  const args = ['template', 'wl', chart];
  if (valuesFile) args.push('-f', join(chart, 'ci', valuesFile));
  for (const s of set) args.push('--set', s);
  const r = helmRun(args);
  assert.equal(r.code, 0, `helm ${args.join(' ')} failed:\n${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as Manifest)
    .filter((d) => d !== null);
}

function byKind(docs: Manifest[], kind: string): Manifest[] {
  return docs.filter((d) => d.kind === kind);
}

function deploymentOf(docs: Manifest[]): { spec: DeploymentSpec; pod: PodSpec; container: Container } {
  const [deployment] = byKind(docs, 'Deployment');
  assert.ok(deployment, 'no Deployment rendered');
  const spec = deployment.spec as DeploymentSpec;
  const container = spec.template.spec.containers[0];
  assert.ok(container);
  return { spec, pod: spec.template.spec, container };
}

function envOf(container: Container): Map<string, string | undefined> {
  return new Map(container.env.map((e) => [e.name, e.value]));
}

/** kubernetes-validate --strict over the documents, offline; exit code and output. */
function kubeValidate(docs: Manifest[], name: string): { code: number; output: string } {
  const file = join(work, `${name}.yaml`);
  writeFileSync(file, docs.map((d) => JSON.stringify(d)).join('\n---\n'));
  const r = spawnSync(kubernetesValidate, ['--strict', file], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

const JSONSCHEMA = `
import json, sys
from jsonschema import Draft202012Validator
schema = json.load(open(sys.argv[1]))
Draft202012Validator.check_schema(schema)
errors = sorted(Draft202012Validator(schema).iter_errors(json.load(sys.stdin)), key=lambda e: list(e.absolute_path))
for e in errors:
    print("/".join(map(str, e.absolute_path)) + ": " + e.message)
sys.exit(1 if errors else 0)
`;

/** Validates one document against a JSON schema of deploy/schemas/ with the venv's jsonschema (draft 2020-12). */
function schemaValidate(doc: unknown, schemaFile: string): { code: number; output: string } {
  const r = spawnSync(venvPython, ['-c', JSONSCHEMA, join(root, 'deploy/schemas', schemaFile)], {
    input: JSON.stringify(doc),
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status ?? -1, output: `${r.stdout}${r.stderr}` };
}

describe('the Helm chart', { skip: noHelm }, () => {
  test('helm lint passes with the chart defaults and (strict) with both ci values files', () => {
    for (const args of [
      ['lint', chart],
      ['lint', '--strict', chart, '-f', join(chart, 'ci/default-values.yaml')],
      ['lint', '--strict', chart, '-f', join(chart, 'ci/all-features-values.yaml')],
    ]) {
      const r = helmRun(args);
      assert.equal(r.code, 0, `helm ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  test('NOTES for a fleet (ci/fleet-values.yaml) name its table, the four DynamoDB actions and the one budget; without a table, none of it', () => {
    // helm template does not render NOTES.txt (and helm install --dry-run needs a cluster): a copy of the chart
    // renders it into a ConfigMap, the template's text unchanged inside a define.
    const copy = join(mkdtempSync(join(tmpdir(), 'wl-chart-notes-')), 'workerless');
    execFileSync('cp', ['-r', chart, copy]);
    const notes = readFileSync(join(chart, 'templates/NOTES.txt'), 'utf8');
    writeFileSync(
      join(copy, 'templates/notes-rendered.yaml'),
      `{{- define "notes.rendered" -}}\n${notes}\n{{- end -}}\n` +
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: |\n{{ include "notes.rendered" . | indent 4 }}\n',
    );
    const rendered = (values: string, set: string[]) => {
      const r = helmRun(['template', 'wl', copy, '-f', join(chart, 'ci', values), '--show-only', 'templates/notes-rendered.yaml', ...set]);
      assert.equal(r.code, 0, r.stderr);
      return (parseAllDocuments(r.stdout)[0]!.toJS() as { data: { notes: string } }).data.notes;
    };
    const fleet = rendered('fleet-values.yaml', ['--set', 'keda.enabled=true']);
    assert.match(fleet, /a fleet on the DynamoDB table workerless-fleet/);
    assert.match(fleet, /dynamodb:DescribeTable, dynamodb:PutItem, dynamodb:Query and dynamodb:DeleteItem/);
    assert.match(fleet, /together they invoke at most 30 at once \(WORKERLESS_FLEET_CONCURRENCY\)/);
    const alone = rendered('default-values.yaml', ['--set', 'keda.enabled=true', '--set', 'keda.awsRegion=eu-west-1']);
    assert.doesNotMatch(alone, /fleet|dynamodb/i);
    assert.match(alone, /each adds \d+ concurrent invocations/);
    rmSync(dirname(copy), { recursive: true, force: true });
  });

  test('refuses to render without a function, naming the values to set', () => {
    const r = helmRun(['template', 'wl', chart]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /set config\.WORKERLESS_FUNCTION and config\.WORKERLESS_QUEUES, or routes/);
  });

  test("routes: passed as WORKERLESS_ROUTES JSON the daemon reads, and KEDA scales on every route's queues", () => {
    const values = join(mkdtempSync(join(tmpdir(), 'wl-chart-')), 'routes.yaml');
    writeFileSync(
      values,
      [
        'routes:',
        '  - { function: payments-fn, queues: "payments:3,refunds:1", concurrency: 20 }',
        '  - { function: reports-fn, queues: [reports], batch-size: 10 }',
        'keda: { enabled: true, awsRegion: eu-west-1 }',
        '',
      ].join('\n'),
    );
    const r = helmRun(['template', 'wl', chart, '-f', values]);
    assert.equal(r.code, 0, r.stderr);
    const docs = parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as Manifest)
      .filter((d) => d !== null);
    const deployment = byKind(docs, 'Deployment')[0] as {
      spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
    };
    const env = deployment.spec.template.spec.containers[0]!.env;
    const routes = env.find((e) => e.name === 'WORKERLESS_ROUTES')?.value;
    assert.deepEqual(JSON.parse(routes!), [
      { function: 'payments-fn', queues: 'payments:3,refunds:1', concurrency: 20 },
      { function: 'reports-fn', queues: ['reports'], 'batch-size': 10 },
    ]);
    // The daemon takes what the chart renders.
    const cli = collectOptions([], { AWS_REGION: 'eu-west-1', WORKERLESS_ROUTES: routes! }, OPTIONS);
    const config = resolveConfig(cli.raw, { AWS_REGION: 'eu-west-1' });
    assert.ok(config.ok, JSON.stringify(config));
    assert.deepEqual(
      config.config.routes.map((route) => [route.functionName, route.concurrency, route.batchSize]),
      [
        ['payments-fn', 20, 1],
        ['reports-fn', 10, 10],
      ],
    );
    const so = byKind(docs, 'ScaledObject')[0] as { spec: { triggers: { metadata: Record<string, string> }[] } };
    assert.deepEqual(
      so.spec.triggers.map((t) => t.metadata['queueURL']),
      ['payments', 'refunds', 'reports'],
    );
  });

  test('refuses a shutdown timeout that is not a number of seconds', () => {
    const r = helmRun([
      'template',
      'wl',
      chart,
      '-f',
      join(chart, 'ci/default-values.yaml'),
      '--set',
      'config.WORKERLESS_SHUTDOWN_TIMEOUT=30s',
    ]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /config\.WORKERLESS_SHUTDOWN_TIMEOUT must be a number of seconds, got "30s"/);
  });

  test('default values: Deployment, ServiceAccount, Service and PDB; probes, HTTP server, security, scrape annotations', () => {
    const docs = render('default-values.yaml');
    assert.deepEqual(docs.map((d) => d.kind).sort(), ['Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
    const { spec, pod, container } = deploymentOf(docs);
    assert.equal(spec.replicas, 1);
    assert.equal(container.image, 'workerless:0.1.0', 'the tag defaults to appVersion');
    const env = envOf(container);
    assert.equal(env.get('WORKERLESS_HTTP_PORT'), '8080');
    assert.equal(env.get('WORKERLESS_HTTP_HOST'), '0.0.0.0');
    assert.equal(env.get('WORKERLESS_FUNCTION'), 'my-function');
    assert.equal(env.get('WORKERLESS_QUEUES'), 'payments:3,default:1');
    assert.equal(env.get('WORKERLESS_CONCURRENCY'), '10');
    assert.ok(!env.has('WORKERLESS_REGION'), 'an empty config value is left out, so the daemon default applies');
    assert.deepEqual(
      container.ports.map((p) => [p.name, p.containerPort]),
      [['http', 8080]],
    );
    assert.deepEqual(container.livenessProbe?.httpGet, { path: '/healthz', port: 'http' });
    assert.deepEqual(container.readinessProbe?.httpGet, { path: '/readyz', port: 'http' });
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.runAsUser, 1000);
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.deepEqual(spec.template.metadata.annotations, {
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '8080',
      'prometheus.io/path': '/metrics',
    });
    assert.equal(pod.terminationGracePeriodSeconds, 30 + 20 + 15, 'daemon defaults 30 + 20, margin 15');
    const [sa] = byKind(docs, 'ServiceAccount');
    assert.equal(pod.serviceAccountName, sa?.metadata.name);
    assert.equal(sa?.metadata.annotations, undefined, 'no IRSA annotation without serviceAccount.roleArn');
  });

  test('every optional part on: ServiceMonitor, KEDA ScaledObject, PDB, IRSA; the HPA owns the replica count', () => {
    const docs = render('all-features-values.yaml');
    assert.deepEqual(docs.map((d) => d.kind).sort(), [
      'Deployment',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'ScaledObject',
      'Service',
      'ServiceAccount',
      'ServiceMonitor',
    ]);
    const { spec, pod, container } = deploymentOf(docs);
    assert.equal(spec.replicas, undefined, 'no replicas with KEDA, so helm upgrade does not fight the HPA');
    assert.equal(pod.terminationGracePeriodSeconds, 90 + 20 + 15);
    assert.equal(
      byKind(docs, 'ServiceAccount')[0]?.metadata.annotations?.['eks.amazonaws.com/role-arn'],
      'arn:aws:iam::123456789012:role/workerless-orders',
    );
    assert.ok(
      container.env.some((e) => e.name === 'WORKERLESS_TEMPORAL_API_KEY' && e.value === undefined),
      'extraEnv with valueFrom',
    );
    const so = byKind(docs, 'ScaledObject')[0] as
      { spec: { scaleTargetRef: { name: string }; triggers: { type: string; metadata: Record<string, string> }[] } } | undefined;
    assert.ok(so);
    assert.equal(so.spec.scaleTargetRef.name, byKind(docs, 'Deployment')[0]?.metadata.name);
    assert.deepEqual(
      so.spec.triggers.map((t) => [t.type, t.metadata['queueURL'], t.metadata['scaleOnInFlight'], t.metadata['identityOwner']]),
      [
        ['aws-sqs-queue', 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-high', 'true', 'pod'],
        ['aws-sqs-queue', 'https://sqs.eu-west-1.amazonaws.com/123456789012/orders-low', 'true', 'pod'],
      ],
    );
    const sm = byKind(docs, 'ServiceMonitor')[0];
    assert.equal(sm?.metadata.labels?.['release'], 'kube-prometheus-stack');
    const pdb = byKind(docs, 'PodDisruptionBudget')[0] as { spec: { minAvailable?: number; maxUnavailable?: number } } | undefined;
    assert.deepEqual(pdb?.spec, {
      minAvailable: 1,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'workerless', 'app.kubernetes.io/instance': 'wl' } },
    });
  });

  test('the Service is optional: service.enabled=false renders none, and a ServiceMonitor, which selects it, refuses', () => {
    const docs = render('default-values.yaml', ['service.enabled=false']);
    assert.deepEqual(docs.map((d) => d.kind).sort(), ['Deployment', 'NetworkPolicy', 'PodDisruptionBudget', 'ServiceAccount']);
    const { container } = deploymentOf(docs);
    assert.deepEqual(container.readinessProbe?.httpGet, { path: '/readyz', port: 'http' }, 'the probes need no Service');
    const r = helmRun([
      'template',
      'wl',
      chart,
      '-f',
      join(chart, 'ci/default-values.yaml'),
      '--set',
      'service.enabled=false',
      '--set',
      'serviceMonitor.enabled=true',
    ]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /serviceMonitor\.enabled needs service\.enabled/);
  });

  test("networkPolicy: on by default, admitting only Prometheus's pods and the node; it admits only the listed peers, and only to the http port", () => {
    assert.deepEqual(byKind(render('default-values.yaml', ['networkPolicy.enabled=false']), 'NetworkPolicy'), [], 'can be turned off');
    interface Peer {
      namespaceSelector?: { matchLabels?: Record<string, string> };
      podSelector?: { matchLabels: Record<string, string> };
    }
    type PolicySpec = {
      podSelector: { matchLabels: Record<string, string> };
      policyTypes: string[];
      ingress: { from: Peer[]; ports: { port: string; protocol: string }[] }[];
    };
    const docs = render('all-features-values.yaml');
    const policy = byKind(docs, 'NetworkPolicy')[0]?.spec as PolicySpec | undefined;
    assert.ok(policy);
    const podLabels = (byKind(docs, 'Deployment')[0]?.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels;
    assert.deepEqual(policy.podSelector.matchLabels, podLabels, "it selects the Deployment's pods");
    assert.deepEqual(policy.policyTypes, ['Ingress']);
    assert.equal(policy.ingress.length, 1);
    assert.deepEqual(policy.ingress[0]?.ports, [{ port: 'http', protocol: 'TCP' }]);
    const prometheus = { namespaceSelector: {}, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } };
    assert.deepEqual(policy.ingress[0]?.from, [
      prometheus,
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
      { podSelector: { matchLabels: { 'app.kubernetes.io/name': 'debug-shell' } } },
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } },
        podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
      },
    ]);
    // By default: Prometheus's pods, in any namespace, to the http port; the node (the kubelet's probes) always.
    const byDefault = byKind(render('default-values.yaml'), 'NetworkPolicy')[0]?.spec as PolicySpec | undefined;
    assert.deepEqual(byDefault?.ingress, [{ ports: [{ port: 'http', protocol: 'TCP' }], from: [prometheus] }]);
    // No peer listed: an empty ingress list, which admits nothing but the pod's node (the kubelet's probes).
    const closed = byKind(render('default-values.yaml', ['networkPolicy.prometheusPodLabels=null']), 'NetworkPolicy')[0]?.spec as
      PolicySpec | undefined;
    assert.deepEqual(closed?.ingress, []);
    assert.deepEqual(closed?.policyTypes, ['Ingress']);
  });

  test('KEDA takes the queues from WORKERLESS_QUEUES without weights, and its region from config', () => {
    const docs = render('default-values.yaml', ['keda.enabled=true', 'config.WORKERLESS_REGION=eu-central-1']);
    const so = byKind(docs, 'ScaledObject')[0] as { spec: { triggers: { metadata: Record<string, string> }[] } } | undefined;
    assert.deepEqual(
      so?.spec.triggers.map((t) => [t.metadata['queueURL'], t.metadata['awsRegion'], t.metadata['identityOwner']]),
      [
        ['payments', 'eu-central-1', 'operator'],
        ['default', 'eu-central-1', 'operator'],
      ],
    );
    const r = helmRun(['template', 'wl', chart, '-f', join(chart, 'ci/default-values.yaml'), '--set', 'keda.enabled=true']);
    assert.notEqual(r.code, 0, 'KEDA without any region');
    assert.match(r.stderr, /keda\.enabled needs keda\.awsRegion/);
  });

  test('terminationGracePeriodSeconds is at least --shutdown-timeout + --poll-for (+ margin) for any setting', () => {
    const cases: { shutdown?: string; pollFor?: string; explicit?: number; margin?: number; want: number }[] = [
      { want: 65 },
      { shutdown: '300', pollFor: '0', want: 315 },
      { shutdown: '12.5', pollFor: '20', want: 48 },
      { shutdown: '3600', pollFor: '20', margin: 0, want: 3620 },
      { shutdown: '30', pollFor: '20', explicit: 10, want: 65 },
      { shutdown: '30', pollFor: '20', explicit: 600, want: 600 },
    ];
    for (const c of cases) {
      const set: string[] = [];
      if (c.shutdown !== undefined) set.push(`config.WORKERLESS_SHUTDOWN_TIMEOUT=${c.shutdown}`);
      if (c.pollFor !== undefined) set.push(`config.WORKERLESS_POLL_FOR=${c.pollFor}`);
      if (c.explicit !== undefined) set.push(`terminationGracePeriodSeconds=${c.explicit}`);
      if (c.margin !== undefined) set.push(`terminationGraceMarginSeconds=${c.margin}`);
      const grace = deploymentOf(render('default-values.yaml', set)).pod.terminationGracePeriodSeconds;
      assert.equal(grace, c.want, JSON.stringify(c));
      assert.ok(grace >= Math.ceil(Number(c.shutdown ?? 30)) + Number(c.pollFor ?? 20), JSON.stringify(c));
    }
  });

  test('the rendered Kubernetes resources pass kubernetes-validate --strict (offline schemas)', { skip: noValidator }, () => {
    for (const [name, docs, extra] of [
      ['default', render('default-values.yaml'), ['NetworkPolicy']],
      ['all-features', render('all-features-values.yaml'), ['NetworkPolicy']],
      ['network-policy-no-peers', render('default-values.yaml', ['networkPolicy.prometheusPodLabels=null']), ['NetworkPolicy']],
    ] as const) {
      const core = docs.filter(
        (d) =>
          !d.apiVersion.includes('.') ||
          d.apiVersion.endsWith('.k8s.io/v1') ||
          d.apiVersion.startsWith('apps/') ||
          d.apiVersion.startsWith('policy/'),
      );
      assert.deepEqual(core.map((d) => d.kind).sort(), ['Deployment', ...extra, 'PodDisruptionBudget', 'Service', 'ServiceAccount']);
      const r = kubeValidate(core, name);
      assert.equal(r.code, 0, r.output);
      for (const d of core) assert.match(r.output, new RegExp(`passed for resource ${d.kind.toLowerCase()}/wl-workerless`), r.output);
    }
  });

  test('kubernetes-validate catches a broken Deployment (the offline schemas are really used)', { skip: noValidator }, () => {
    const docs = render('default-values.yaml');
    const broken = structuredClone(byKind(docs, 'Deployment')[0]) as Manifest & { spec: Record<string, unknown> };
    broken.spec['replicas'] = 'one';
    const r = kubeValidate([broken], 'broken');
    assert.notEqual(r.code, 0, r.output);
    assert.match(r.output, /replicas/);
  });

  test(
    'the ScaledObject and ServiceMonitor match the hand-kept schemas in deploy/schemas (not upstream CRDs)',
    { skip: noValidator },
    () => {
      const docs = render('all-features-values.yaml');
      const keda = render('default-values.yaml', [
        'keda.enabled=true',
        'keda.awsRegion=us-east-1',
        'keda.identityOwner=',
        'keda.behavior.scaleDown.stabilizationWindowSeconds=600',
      ]);
      for (const so of [...byKind(docs, 'ScaledObject'), ...byKind(keda, 'ScaledObject')]) {
        const r = schemaValidate(so, 'keda-scaledobject.schema.json');
        assert.equal(r.code, 0, r.output);
      }
      const sm = byKind(docs, 'ServiceMonitor')[0];
      assert.ok(sm);
      const r = schemaValidate(sm, 'servicemonitor.schema.json');
      assert.equal(r.code, 0, r.output);

      // And the schemas do reject what KEDA would: a number where the scaler wants a string, a missing region.
      const bad = structuredClone(byKind(docs, 'ScaledObject')[0]) as { spec: { triggers: { metadata: Record<string, unknown> }[] } };
      const trigger = bad.spec.triggers[0];
      assert.ok(trigger);
      trigger.metadata['queueLength'] = 5;
      delete trigger.metadata['awsRegion'];
      const rejected = schemaValidate(bad, 'keda-scaledobject.schema.json');
      assert.equal(rejected.code, 1, rejected.output);
      assert.match(rejected.output, /queueLength/);
      assert.match(rejected.output, /awsRegion/);
    },
  );
});

/**
 * Runs a health-check one-liner (`node -e SCRIPT`) with the given env; its exit code. Asynchronous: the server it
 * probes runs in this process.
 */
function runHealthCheck(script: string, env: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], {
      env: { PATH: process.env['PATH'] ?? '', ...env },
      stdio: 'ignore',
      timeout: 15_000,
    });
    child.on('exit', (code) => resolve(code ?? -1));
  });
}

describe('health checks without curl', () => {
  let server: Server | undefined;
  let status = 200;
  after(() => server?.close());

  async function listen(): Promise<number> {
    server = createServer((req, res) => {
      res.statusCode = req.url === '/healthz' ? status : 404;
      res.end(status === 200 ? 'ok' : 'unhealthy');
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    return (server?.address() as AddressInfo).port;
  }

  function dockerfileHealthCheck(): { script: string; dockerfile: string } {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, '');
    const line = dockerfile.split('\n').find((l) => l.startsWith('HEALTHCHECK'));
    assert.ok(line, 'Dockerfile has a HEALTHCHECK');
    const cmd = JSON.parse(line.slice(line.indexOf('CMD') + 3).trim()) as string[];
    assert.deepEqual(cmd.slice(0, 2), ['node', '-e']);
    return { script: cmd[2] ?? '', dockerfile };
  }

  function ecsHealthCheck(): { script: string; container: Record<string, unknown> } {
    const td = JSON.parse(readFileSync(join(root, 'deploy/ecs/task-definition.json'), 'utf8')) as {
      containerDefinitions: Record<string, unknown>[];
    };
    const container = td.containerDefinitions[0];
    assert.ok(container);
    const cmd = (container['healthCheck'] as { command: string[] }).command;
    assert.deepEqual(cmd.slice(0, 3), ['CMD', 'node', '-e']);
    return { script: cmd[3] ?? '', container };
  }

  test('the Dockerfile documents port 8080, listens on 0.0.0.0 and probes /healthz only when the server is on', async () => {
    const { script, dockerfile } = dockerfileHealthCheck();
    assert.match(dockerfile, /^ENV WORKERLESS_HTTP_HOST=0\.0\.0\.0$/m);
    assert.match(dockerfile, /^EXPOSE 8080$/m);
    assert.ok(dockerfile.indexOf('HEALTHCHECK') < dockerfile.indexOf('ENTRYPOINT'));
    assert.equal(await runHealthCheck(script, {}), 0, 'server off (no WORKERLESS_HTTP_PORT): healthy');
    const port = String(await listen());
    status = 200;
    assert.equal(await runHealthCheck(script, { WORKERLESS_HTTP_PORT: port }), 0);
    status = 503;
    assert.equal(await runHealthCheck(script, { WORKERLESS_HTTP_PORT: port }), 1);
    assert.equal(await runHealthCheck(script, { WORKERLESS_HTTP_PORT: '1' }), 1, 'nothing listening');
  });

  test('the ECS container health check fetches /healthz and fails on 503 or no server', async () => {
    const { script } = ecsHealthCheck();
    const port = server ? (server.address() as AddressInfo).port : await listen();
    status = 200;
    assert.equal(await runHealthCheck(script, { WORKERLESS_HTTP_PORT: String(port) }), 0);
    status = 503;
    assert.equal(await runHealthCheck(script, { WORKERLESS_HTTP_PORT: String(port) }), 1);
    assert.equal(await runHealthCheck(script, { WORKERLESS_HTTP_PORT: '1' }), 1);
  });

  test('the ECS task definition: Fargate, stopTimeout within 120 s and above shutdown timeout + poll-for', () => {
    const td = JSON.parse(readFileSync(join(root, 'deploy/ecs/task-definition.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(td['requiresCompatibilities'], ['FARGATE']);
    assert.equal(td['networkMode'], 'awsvpc');
    const { container } = ecsHealthCheck();
    const stopTimeout = container['stopTimeout'] as number;
    assert.equal(stopTimeout, 120);
    const env = new Map((container['environment'] as { name: string; value: string }[]).map((e) => [e.name, e.value]));
    assert.equal(env.get('WORKERLESS_HTTP_PORT'), '8080');
    assert.equal(env.get('WORKERLESS_HTTP_HOST'), '0.0.0.0');
    const shutdown = Number(env.get('WORKERLESS_SHUTDOWN_TIMEOUT'));
    const pollFor = Number(env.get('WORKERLESS_POLL_FOR') ?? 20);
    assert.ok(shutdown + pollFor < stopTimeout, `${shutdown} + ${pollFor} must stay below stopTimeout ${stopTimeout}`);
    const hc = container['healthCheck'] as { timeout: number; interval: number };
    assert.ok(hc.timeout < hc.interval);
  });

  test('the ECS container drops every capability and runs on a read-only root, with a writable /tmp volume', () => {
    const td = JSON.parse(readFileSync(join(root, 'deploy/ecs/task-definition.json'), 'utf8')) as {
      volumes: { name: string; host?: unknown }[];
    };
    const { container } = ecsHealthCheck();
    // Fargate accepts drop lists (and only SYS_PTRACE in add): Amazon ECS API reference, KernelCapabilities.
    assert.deepEqual(container['linuxParameters'], { capabilities: { drop: ['ALL'] } });
    assert.equal(container['readonlyRootFilesystem'], true);
    assert.equal(container['privileged'], undefined);
    // Node and the AWS SDK write nothing but temporary files: /tmp is the one writable path, a task-local volume.
    const mounts = container['mountPoints'] as { sourceVolume: string; containerPath: string; readOnly: boolean }[];
    assert.deepEqual(
      mounts.map((m) => [m.containerPath, m.readOnly]),
      [['/tmp', false]],
    );
    const volume = td.volumes.find((v) => v.name === mounts[0]?.sourceVolume);
    assert.ok(volume, 'the /tmp mount names a volume of the task');
    assert.equal(volume.host, undefined, 'a task-local volume, not a host path');
  });

  test("the Dockerfile's runtime stage removes npm, npx, corepack and yarn, and runs no package manager", () => {
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    assert.match(runtime, /^\nFROM \$\{NODE_IMAGE\} AS runtime/);
    for (const path of [
      '/usr/local/lib/node_modules/npm',
      '/usr/local/lib/node_modules/corepack',
      '/usr/local/bin/npm',
      '/usr/local/bin/npx',
      '/usr/local/bin/corepack',
      '/usr/local/bin/yarn',
    ]) {
      assert.ok(runtime.includes(` ${path} `) || runtime.includes(` ${path}\n`), `the runtime stage removes ${path}`);
    }
    const runs = runtime.split('\n').filter((l) => l.startsWith('RUN '));
    for (const r of runs) assert.doesNotMatch(r, /\b(npm|npx|corepack|yarn) (ci|install|run|exec|enable)\b/, r);
  });

  test('the ECS autoscaling template tracks visible messages per running task with metric math', () => {
    const cfn = JSON.parse(readFileSync(join(root, 'deploy/ecs/service-autoscaling.json'), 'utf8')) as {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
    };
    const policy = Object.values(cfn.Resources).find((r) => r.Type === 'AWS::ApplicationAutoScaling::ScalingPolicy');
    assert.ok(policy);
    assert.equal(policy.Properties['PolicyType'], 'TargetTrackingScaling');
    const metrics = (
      (policy.Properties['TargetTrackingScalingPolicyConfiguration'] as Record<string, unknown>)['CustomizedMetricSpecification'] as {
        Metrics: { Id: string; Expression?: string; ReturnData: boolean; MetricStat?: { Metric: { MetricName: string } } }[];
      }
    ).Metrics;
    const returned = metrics.filter((m) => m.ReturnData);
    assert.equal(returned.length, 1, 'target tracking needs exactly one returned series');
    const expression = returned[0]?.Expression ?? '';
    const ids = metrics.filter((m) => m.MetricStat).map((m) => m.Id);
    for (const id of ids) assert.match(expression, new RegExp(`\\b${id}\\b`), `${id} is used in ${expression}`);
    const names = metrics.flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric.MetricName] : []));
    assert.ok(names.includes('ApproximateNumberOfMessagesVisible'));
    assert.ok(names.includes('RunningTaskCount'));
    assert.ok(Object.values(cfn.Resources).some((r) => r.Type === 'AWS::ApplicationAutoScaling::ScalableTarget'));
  });
});

describe('dashboards', () => {
  // prom-client's default process metrics, under the prefix src/operator/metrics/prometheus.ts registers them with.
  const defaultRegistry = new Registry();
  collectDefaultMetrics({ register: defaultRegistry, prefix: 'workerless_' });
  const processMetrics = new Set(defaultRegistry.getMetricsAsArray().map((m) => m.name));
  const prometheusNames = new Map(ALL_METRICS.map((m) => [m.prometheus, m]));
  const cloudwatchNames = new Set(ALL_METRICS.map((m) => m.cloudwatch));

  function collectStrings(value: unknown, key: string, out: string[] = []): string[] {
    if (Array.isArray(value)) for (const v of value) collectStrings(v, key, out);
    else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) {
        if (k === key && typeof v === 'string') out.push(v);
        else collectStrings(v, key, out);
      }
    }
    return out;
  }

  test('the Grafana dashboard is valid JSON and names only metrics of src/core/telemetry/metric-names.ts (or prom-client defaults)', () => {
    const dashboard = JSON.parse(readFileSync(join(root, 'deploy/dashboards/grafana-workerless.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(typeof dashboard['title'], 'string');
    const queries = [...collectStrings(dashboard['panels'], 'expr'), ...collectStrings(dashboard['templating'], 'definition')];
    assert.ok(queries.length > 10);
    const used = new Set<string>();
    for (const q of queries) {
      for (const [name] of q.matchAll(/\bworkerless_[a-z0-9_]+/g)) {
        if (processMetrics.has(name)) {
          used.add(name);
          continue;
        }
        const suffix = /_(bucket|sum|count)$/.exec(name);
        const base =
          suffix && prometheusNames.get(name.slice(0, -suffix[0].length))?.kind === 'histogram' ? name.slice(0, -suffix[0].length) : name;
        assert.ok(prometheusNames.has(base), `${name} (in ${q}) is not a metric of src/core/telemetry/metric-names.ts`);
        if (base !== name) assert.notEqual(suffix?.[1], undefined);
        else assert.notEqual(prometheusNames.get(base)?.kind, 'histogram', `${name}: query a histogram through _bucket/_sum/_count`);
        used.add(base);
      }
    }
    for (const wanted of [
      'workerless_polled_events_total',
      'workerless_in_flight_messages',
      'workerless_failed_invoke_events_total',
      'workerless_throttled_invocations_total',
      'workerless_invocation_duration_seconds',
      'workerless_receive_to_settle_seconds',
      'workerless_aws_api_calls_total',
      'workerless_function_paused',
      'workerless_temporal_backlog',
      'workerless_temporal_workers_alive',
    ]) {
      assert.ok(used.has(wanted), `the dashboard shows ${wanted}`);
    }
    const quantiles = queries.filter((q) => q.includes('histogram_quantile'));
    assert.ok(
      quantiles.some((q) => q.startsWith('histogram_quantile(0.5,')) && quantiles.some((q) => q.startsWith('histogram_quantile(0.99,')),
    );
  });

  test('the CloudWatch dashboard is valid JSON and names only CloudWatch metrics of src/core/telemetry/metric-names.ts', () => {
    const body = JSON.parse(readFileSync(join(root, 'deploy/dashboards/cloudwatch-workerless.json'), 'utf8')) as {
      widgets: { type: string; properties: { metrics?: unknown[][] } }[];
    };
    const used = new Set<string>();
    for (const widget of body.widgets.filter((w) => w.type === 'metric')) {
      for (const entry of widget.properties.metrics ?? []) {
        for (const item of entry) {
          if (item && typeof item === 'object' && 'expression' in item) {
            const expression = String(item.expression);
            const searches = [...expression.matchAll(/SEARCH\('\{([^}]*)\} MetricName="([^"]+)"/g)];
            assert.ok(searches.length > 0, `unexpected expression ${expression}`);
            for (const [, schema = '', metric = ''] of searches) {
              assert.match(schema, /^Workerless-[^,]+,/, `namespace Workerless-<name> in ${expression}`);
              assert.ok(cloudwatchNames.has(metric), `${metric} is not a CloudWatch name of src/core/telemetry/metric-names.ts`);
              used.add(metric);
            }
          } else if (typeof item === 'string' && entry[0] === item && item.startsWith('Workerless-')) {
            const metric = String(entry[1]);
            assert.ok(cloudwatchNames.has(metric), `${metric} is not a CloudWatch name of src/core/telemetry/metric-names.ts`);
            used.add(metric);
          }
        }
      }
    }
    for (const wanted of [
      'PolledEventCount',
      'FailedInvokeEventCount',
      'ThrottledInvokeCount',
      'InFlightEventCount',
      'InvocationDuration',
      'ProcessingDuration',
      'FunctionPaused',
      'AwsApiCalls',
      'Backlog',
    ]) {
      assert.ok(used.has(wanted), `the dashboard shows ${wanted}`);
    }
  });
});

test('tools for the chart checks', { skip: haveHelm && haveValidator ? false : 'reported above' }, () => {
  process.stderr.write(
    `# ${execFileSync(helm, ['version', '--short'], { encoding: 'utf8' }).trim()}, ` +
      `${execFileSync(kubernetesValidate, ['--version'], { encoding: 'utf8' }).trim()}\n`,
  );
});
