import type { PermitGrant, PermitRequest } from './lock-lease';

/** The grant of `request`, as every semaphore strategy returns it: the request's identity, a token and a lease end. */
export function permitGrantOf(request: PermitRequest, fencingToken: number | undefined, expiresAt: number): PermitGrant {
  return {
    key: request.key,
    owner: request.owner,
    mode: request.mode,
    permits: request.permits,
    weight: request.weight,
    fencingToken,
    expiresAt,
  };
}
