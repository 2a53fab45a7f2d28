import { diag } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace';

/**
 * OTEL_TRACES_SAMPLER (and OTEL_TRACES_SAMPLER_ARG, the ratio) as the specification defines them;
 * `parentbased_always_on` when unset or unknown (said once through the diagnostics).
 */
export function samplerFor(spec: { readonly name: string; readonly arg: string | undefined }): Sampler {
  const ratio = () => {
    const value = Number(spec.arg);
    return spec.arg !== undefined && Number.isFinite(value) && value >= 0 && value <= 1 ? value : 1;
  };
  switch (spec.name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    default:
      diag.warn(`OTEL_TRACES_SAMPLER \`${spec.name}\` is not one this server knows; sampling every trace its caller samples`);
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}
