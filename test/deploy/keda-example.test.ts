// deploy/keda/prometheus-scaledobject.yaml: its structure as KEDA's ScaledObject and Prometheus scaler documents it
// (https://keda.sh/docs/latest/scalers/prometheus/: serverAddress, query, threshold required; every metadata
// value a string), and every metric its queries name is one workerless exposes, with the suffix its kind has.
// Not checked against KEDA's CRD schema: there is no offline copy here (deploy/schemas/ holds the chart's subset for
// aws-sqs-queue triggers only).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { ALL_METRICS } from '../../src/core/telemetry/metric-names.ts';

interface Trigger {
  type: string;
  name?: string;
  metricType?: string;
  metadata: Record<string, unknown>;
}

const doc = parse(readFileSync(new URL('../../deploy/keda/prometheus-scaledobject.yaml', import.meta.url), 'utf8')) as {
  apiVersion: string;
  kind: string;
  spec: { scaleTargetRef: { name: string }; minReplicaCount: number; maxReplicaCount: number; triggers: Trigger[] };
};

describe('the KEDA Prometheus example', () => {
  it('is a ScaledObject whose triggers are Prometheus scalers with string metadata', () => {
    assert.equal(doc.apiVersion, 'keda.sh/v1alpha1');
    assert.equal(doc.kind, 'ScaledObject');
    assert.ok(doc.spec.scaleTargetRef.name.length > 0);
    assert.ok(doc.spec.minReplicaCount >= 1 && doc.spec.maxReplicaCount >= doc.spec.minReplicaCount);
    assert.deepEqual(
      doc.spec.triggers.map((t) => t.name),
      ['backlog', 'age'],
    );
    for (const t of doc.spec.triggers) {
      assert.equal(t.type, 'prometheus');
      assert.ok(['AverageValue', 'Value'].includes(t.metricType ?? 'AverageValue'));
      for (const key of ['serverAddress', 'query', 'threshold']) assert.ok(key in t.metadata, `${t.name}: ${key}`);
      for (const [key, value] of Object.entries(t.metadata)) assert.equal(typeof value, 'string', `${t.name}.${key} must be a string`);
      assert.ok(Number(t.metadata['threshold']) > 0);
    }
  });

  it('names only metrics workerless exposes, and takes max (not sum) of the gauges every replica reports alike', () => {
    const exposed = new Set(
      ALL_METRICS.flatMap((d) => (d.kind === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => d.prometheus + s) : [d.prometheus])),
    );
    for (const t of doc.spec.triggers) {
      const query = String(t.metadata['query']);
      const names = [...query.matchAll(/\b(workerless_[a-z_]+)\{/g)].map((m) => m[1]!);
      assert.ok(names.length > 0, query);
      for (const name of names) assert.ok(exposed.has(name), `${name} in ${query}`);
      for (const gauge of names.filter((n) => n.startsWith('workerless_queue_messages_'))) {
        assert.ok(query.includes(`max(${gauge}`), `${gauge} aggregated with max in ${query}`);
      }
    }
  });
});

// deploy/keda/temporal-worker-set-scaledobject.yaml: the same checks for the worker-set example, whose one trigger
// follows the desired-workers gauge (Value, threshold 1: the replica count is the gauge).
const workerSet = parse(
  readFileSync(new URL('../../deploy/keda/temporal-worker-set-scaledobject.yaml', import.meta.url), 'utf8'),
) as typeof doc;

describe('the KEDA worker-set example', () => {
  it('is a ScaledObject with one Prometheus trigger on workerless_temporal_desired_workers, max across replicas, Value 1', () => {
    assert.equal(workerSet.apiVersion, 'keda.sh/v1alpha1');
    assert.equal(workerSet.kind, 'ScaledObject');
    assert.ok(workerSet.spec.scaleTargetRef.name.length > 0);
    assert.ok(workerSet.spec.minReplicaCount >= 0 && workerSet.spec.maxReplicaCount >= Math.max(1, workerSet.spec.minReplicaCount));
    assert.equal(workerSet.spec.triggers.length, 1);
    const [t] = workerSet.spec.triggers;
    assert.equal(t?.type, 'prometheus');
    assert.equal(t?.metricType, 'Value');
    for (const key of ['serverAddress', 'query', 'threshold']) assert.ok(key in (t?.metadata ?? {}), key);
    for (const [key, value] of Object.entries(t?.metadata ?? {})) assert.equal(typeof value, 'string', `${key} must be a string`);
    assert.equal(t?.metadata['threshold'], '1');
    const gauge = ALL_METRICS.find((d) => d.prometheus === 'workerless_temporal_desired_workers');
    assert.equal(gauge?.kind, 'gauge');
    assert.ok(gauge?.labels.includes('task_queue'));
    assert.match(String(t?.metadata['query']), /^max\(workerless_temporal_desired_workers\{task_queue="[^"]+"\}\)$/);
  });
});
