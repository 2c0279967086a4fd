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
type InterceptorProvider = (method: unknown) => Interceptor;
/** Where grpc-js takes interceptors: a client's options (`grpcOptions`) and a call's options. Never both lists in one place. */
interface InterceptorLists {
  interceptors?: Interceptor[];
  interceptor_providers?: InterceptorProvider[];
}
/** The function form of etcd3's `defaultCallOptions`. */
type CallOptionsFactory = Extract<NonNullable<IOptions['defaultCallOptions']>, (context: never) => unknown>;

/**
 * The calls in flight of a client the strategy made, so that its close can cancel them. etcd3's `close()`
 * leaves them running: a watch stream waits for the server to confirm each watcher's cancel, a call
 * without a deadline for its answer; and grpc-js keeps the connection, and with it the process, alive
 * while any is in flight. A server that stopped answering would keep a closed application alive for good.
 * Each call is seen through a grpc-js interceptor added beside the user's own (see `clientOptions`).
 */
export class EtcdCallsInFlight {
  private readonly calls = new Set<GrpcCall>();
  private readonly grpc = createRequire(require.resolve('etcd3'))('@grpc/grpc-js') as GrpcJs;

  /**
   * The client's options with the interceptor that tracks each call, beside the user's own: grpc-js takes
   * interceptors from the client's options (`grpcOptions`) unless a call's options name some, which then
   * replace them; and a list of interceptors and a list of providers never in one place. So the tracker
   * goes where the user put theirs, in the same kind of list, and at the client otherwise; the user's
   * options are copied, not changed.
   */
  clientOptions(connection: IOptions): Pick<IOptions, 'grpcOptions' | 'defaultCallOptions'> {
    const grpcOptions = this.beside(connection.grpcOptions as InterceptorLists | undefined) as IOptions['grpcOptions'];
    const userDefaults = connection.defaultCallOptions;
    if (typeof userDefaults !== 'function') return { grpcOptions, defaultCallOptions: this.besideTheUsers(userDefaults) };
    const defaultCallOptions: CallOptionsFactory = (context) => this.besideTheUsers(userDefaults(context)) as ReturnType<CallOptionsFactory>;
    return { grpcOptions, defaultCallOptions };
  }

  /** A call's options: the tracker added only where the user named interceptors (which replace the client's). */
  private besideTheUsers<T>(options: T): T {
    const lists = options as InterceptorLists | undefined;
    return lists?.interceptors?.length || lists?.interceptor_providers?.length ? (this.beside(lists) as T) : options;
  }

  private beside(options: InterceptorLists | undefined): InterceptorLists {
    if (options?.interceptor_providers?.length) return { ...options, interceptor_providers: [...options.interceptor_providers, () => this.interceptor] };
    return { ...options, interceptors: [...(options?.interceptors ?? []), this.interceptor] };
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
