// A real OTLP/HTTP (JSON) receiver on loopback for telemetry tests: it accepts what the exporters POST
// to /v1/traces and /v1/metrics and flattens it into spans and metric points to assert on.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

type AttributeValue = string | number | boolean;

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** 0 unset, 1 ok, 2 error */
  readonly statusCode: number;
  readonly serviceName: string | undefined;
}

export interface ReceivedPoint {
  readonly metric: string;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** Sum points: the value. Histogram points: the sum. */
  readonly value: number;
  /** Histogram points only. */
  readonly count: number | undefined;
}

export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The points of the latest export that carried each metric (the SDK exports cumulative totals). */
  latestPoints(metric: string): ReceivedPoint[];
  readonly requests: { path: string; contentType: string | undefined }[];
  close(): Promise<void>;
}

interface JsonKeyValue {
  key: string;
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const latest = new Map<string, ReceivedPoint[]>();
  const requests: { path: string; contentType: string | undefined }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] });
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        if (req.url === '/v1/traces') collectSpans(body, spans);
        else if (req.url === '/v1/metrics') collectMetrics(body, latest);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (error) {
        res.writeHead(400).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests,
    latestPoints: (metric) => latest.get(metric) ?? [],
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function attributesOf(list: unknown): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const { key, value } of (list as JsonKeyValue[] | undefined) ?? []) {
    const v = value.stringValue ?? value.doubleValue ?? value.boolValue ?? value.intValue;
    if (v !== undefined) out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v;
  }
  return out;
}

function collectSpans(body: Record<string, unknown>, into: ReceivedSpan[]): void {
  for (const rs of (body.resourceSpans as Record<string, unknown>[] | undefined) ?? []) {
    const resource = attributesOf((rs.resource as { attributes?: unknown } | undefined)?.attributes);
    for (const ss of (rs.scopeSpans as Record<string, unknown>[] | undefined) ?? []) {
      for (const span of (ss.spans as Record<string, unknown>[] | undefined) ?? []) {
        const parent = span.parentSpanId as string | undefined;
        into.push({
          traceId: span.traceId as string,
          spanId: span.spanId as string,
          parentSpanId: parent ? parent : undefined,
          name: span.name as string,
          attributes: attributesOf(span.attributes),
          statusCode: Number((span.status as { code?: number } | undefined)?.code ?? 0),
          serviceName: resource['service.name'] as string | undefined,
        });
      }
    }
  }
}

function collectMetrics(body: Record<string, unknown>, into: Map<string, ReceivedPoint[]>): void {
  for (const rm of (body.resourceMetrics as Record<string, unknown>[] | undefined) ?? []) {
    for (const sm of (rm.scopeMetrics as Record<string, unknown>[] | undefined) ?? []) {
      for (const metric of (sm.metrics as Record<string, unknown>[] | undefined) ?? []) {
        const name = metric.name as string;
        const sum = metric.sum as { dataPoints?: Record<string, unknown>[] } | undefined;
        const histogram = metric.histogram as { dataPoints?: Record<string, unknown>[] } | undefined;
        const points: ReceivedPoint[] = [];
        for (const p of sum?.dataPoints ?? []) {
          points.push({
            metric: name,
            attributes: attributesOf(p.attributes),
            value: Number(p.asDouble ?? p.asInt ?? 0),
            count: undefined,
          });
        }
        for (const p of histogram?.dataPoints ?? []) {
          points.push({
            metric: name,
            attributes: attributesOf(p.attributes),
            value: Number(p.sum ?? 0),
            count: Number(p.count ?? 0),
          });
        }
        into.set(name, points);
      }
    }
  }
}
