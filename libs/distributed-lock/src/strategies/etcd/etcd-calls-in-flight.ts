import { createRequire } from 'node:module';
import type { IOptions } from 'etcd3';

// What the strategy uses of grpc-js, the gRPC library etcd3 depends on (and makes its calls with): its
// public interceptor API. Typed here rather than imported, as with cockatiel in etcd-connection.ts.
interface GrpcStatus {
  readonly code: number;
}
interface GrpcListener {
  onReceiveStatus?(status: GrpcStatus, next: (status: GrpcStatus) => void): void;
}
interface GrpcCall {
  cancelWithStatus(code: number, details: string): void;
}
interface GrpcRequester {
  start?(metadata: unknown, listener: unknown, next: (metadata: unknown, listener: GrpcListener) => void): void;
}
interface GrpcJs {
  InterceptingCall: new (next: unknown, requester: GrpcRequester) => GrpcCall;
  status: { CANCELLED: number };
}
type Interceptor = (options: unknown, nextCall: (options: unknown) => unknown) => GrpcCall;
type CallOptions = { interceptors?: Interceptor[] } & Record<string, unknown>;
/** The function form of etcd3's `defaultCallOptions`. */
type CallOptionsFactory = Extract<NonNullable<IOptions['defaultCallOptions']>, (context: never) => unknown>;

/**
 * The calls in flight of a client the strategy made, so that its close can cancel them. etcd3's `close()`
 * leaves them running: a watch stream waits for the server to confirm each watcher's cancel, a call
 * without a deadline for its answer; and grpc-js keeps the connection, and with it the process, alive
 * while any is in flight. A server that stopped answering would keep a closed application alive for good.
 * Each call is seen through a grpc-js interceptor added to the client's default call options.
 */
export class EtcdCallsInFlight {
  private readonly calls = new Set<GrpcCall>();
  private readonly grpc = createRequire(require.resolve('etcd3'))('@grpc/grpc-js') as GrpcJs;

  /** The client's `defaultCallOptions`: the user's, if any, with the interceptor that tracks each call. */
  withTracking(userDefaults: IOptions['defaultCallOptions']): CallOptionsFactory {
    const interceptor = this.interceptor;
    return (context) => {
      const base = (typeof userDefaults === 'function' ? userDefaults(context) : userDefaults) as CallOptions | undefined;
      return { ...base, interceptors: [...(base?.interceptors ?? []), interceptor] } as ReturnType<CallOptionsFactory>;
    };
  }

  /** Ends every call still in flight, on our side: grpc-js then lets the connection go. */
  cancelAll(): void {
    const calls = [...this.calls];
    this.calls.clear();
    for (const call of calls) call.cancelWithStatus(this.grpc.status.CANCELLED, 'the lock strategy closed');
  }

  private readonly interceptor: Interceptor = (options, nextCall) => {
    const calls = this.calls;
    const call: GrpcCall = new this.grpc.InterceptingCall(nextCall(options), {
      start: (metadata, _listener, next) =>
        next(metadata, {
          onReceiveStatus: (status, nextStatus) => {
            calls.delete(call);
            nextStatus(status);
          },
        }),
    });
    calls.add(call);
    return call;
  };
}
