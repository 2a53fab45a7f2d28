import type { WaitReason } from '../../policy/dispatch.js';

/** Why an attempt still waits: the dispatcher's reason, or a slot of the cap shared by every server process. */
export type QueueReason = WaitReason | { readonly kind: 'shared_cap'; readonly ahead: number };
