import type { WaitReason } from '../../policy/dispatch.js';
import type { Elsewhere } from '../../policy/shared-queue.js';

/**
 * Why an attempt still waits: the dispatcher's reason, or a slot of the cap shared by every server
 * process; with, in a queue shared by several servers, the other servers' calls it waits behind.
 */
export type QueueReason = (WaitReason | { readonly kind: 'shared_cap'; readonly ahead: number }) & {
  readonly elsewhere?: Elsewhere | null;
};
