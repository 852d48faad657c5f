/**
 * The state of the protocol model: every receipt, outcome row and limit
 * count on the servers, every worker's place in its call, the jobs, the
 * approver, what is left of the scenario's budgets of faults, and the ghost
 * facts the invariants read (what really happened, which no server stores).
 *
 * Time is counted in ticks of the Redis server's clock, and every deadline
 * is stored as the ticks left until it passes (0 = passed), so two states
 * that differ only in when they happened are one state.
 * Over 300 lines: every field of the state, each with what it stands for,
 * kept in one place, and the few functions that make and copy a state.
 */

/** What a tool declares about its effect, as the receipt records it. */
export type Effect = 'opaque' | 'resumable' | 'transactional';

/** One call of the scenario: its tool's effect, whether a person must approve it, whether the limit counts it. */
export interface CallSpec {
  readonly effect: Effect;
  readonly approval: boolean;
  readonly limited: boolean;
}

/** How many of each fault (or outside actor's move) one path of the exploration may contain. */
export interface Budgets {
  /** Workers SIGKILLed. */
  kills: number;
  /** Workers SIGSTOPped (each resumed later, or never). */
  stops: number;
  /** Receipts that expire once their retention passes. */
  expiries: number;
  /** Claim replies lost on the way back (the script ran). */
  lostReplies: number;
  /** Operator resolves of an ambiguous receipt. */
  resolves: number;
  /** Approver decisions (two racing decisions need two). */
  decisions: number;
  /** Tool runs that end with a failure instead of their effect. */
  failures: number;
}

/** A scenario: the parts explored together, and how far. */
export interface Scenario {
  readonly name: string;
  readonly workers: number;
  readonly calls: readonly CallSpec[];
  /** The one limit's max (calls per window); 0 when no call is limited. */
  readonly limitMax: number;
  /** Deadlines in ticks: an attempt's lease, an approval's wait, a reservation's give-back bound, a reconcile lease. */
  readonly ticks: { readonly lease: number; readonly approval: number; readonly reservation: number; readonly reconcile: number };
  readonly budgets: Readonly<Budgets>;
  /**
   * PostgreSQL never ends a takeover's own session (its idle-in-transaction
   * timeout while the takeover's worker is stopped): set where a scenario
   * leaves out a known finding about just that (protocol/findings.ts).
   */
  readonly takeoverSessionsKept?: boolean;
}

export type ReceiptStatus = 'absent' | 'awaiting' | 'approved' | 'denied' | 'running' | 'completed' | 'failed';

/**
 * One call's receipt (the fields of its hash the protocol reads). Ids
 * (`epoch`, `token`, `approvalEpoch`) are small numbers standing for the
 * random tokens the real claims mint; 0 is none.
 */
export interface Receipt {
  status: ReceiptStatus;
  attempts: number;
  epoch: number;
  effect: Effect;
  /** Ticks left on the attempt's lease (running only). */
  lease: number;
  /** `ambiguous_ms` is set: a claim reported the attempt ambiguous (kept by a settle, cleared by a next attempt). */
  ambiguous: boolean;
  /** Which result the receipt holds (see `resultOf`), 0 none. */
  result: number;
  /** Failed with tier `neverStarted` (a lost claim's release asks it). */
  neverStarted: boolean;
  /** `claim_token` of the takeover that started the attempt, 0 none. */
  token: number;
  reconciles: number;
  reconcileLease: number;
  /** The one step of a resumable tool is recorded. */
  step: boolean;
  /** The epoch the approval named (`approval_epoch` once started), 0 none. */
  approvalEpoch: number;
  /** Ticks until an awaiting approval expires. */
  approvalLeft: number;
  decidedBy: 'none' | 'approver' | 'expiry';
  /** The reservation id its field `limit:<name>` holds, 0 none. */
  limitHolder: number;
  /** The attempt that reservation was bound for (`limit:<name>:attempt`), 0 none. */
  limitAttempt: number;
  /**
   * The attempt's lease was renewed (a heartbeat, a confirm, an
   * outcome-unknown) since the last reconcile began: `lease_until_ms` later
   * than that begin's now, which reconcile-settle-3.lua compares.
   */
  renewed: boolean;
}

/** An outcome row of one lifetime of a transactional call, on PostgreSQL. */
export interface OutcomeRow {
  readonly epoch: number;
  /** `open`: inserted by a transaction not yet ended, invisible to others' reads, blocking their inserts. */
  state: 'open' | 'committed';
  attempt: number;
}

/** A reservation of the one limit, on the limit's slot. */
export interface Reservation {
  readonly id: number;
  readonly call: number;
  state: 'pending' | 'committed';
  /** Ticks until its deadline (pending only). */
  deadline: number;
}

/** The one limit's count, and the run's bindings hash. */
export interface LimitCount {
  used: number;
  pending: number;
  reservations: Reservation[];
  /** Per call, its receipt's pending reservation (`p:<receipt key>`), which a redelivery reuses; 0 none. */
  pendingFor: number[];
  /** Reservation id to what became of it on the run's side: the call it is bound to, or -1 revoked. */
  bindings: Map<number, number>;
}

export type JobStatus = 'waiting' | 'active' | 'done';

/** Where a worker is in its call: the next step it takes (see worker.ts for each). */
export type Pc =
  | 'idle'
  | 'gate'
  | 'reserve'
  | 'settleExpired'
  | 'commitExpired'
  | 'releaseExpired'
  | 'boundOn'
  | 'claim'
  | 'releaseLost'
  | 'reclaim'
  | 'flag'
  | 'reconcileBegin'
  | 'sweepLifetime'
  | 'lockLifetime'
  | 'readOutcome'
  | 'reconcileSettle'
  | 'settleShare'
  | 'commitHeld'
  | 'releaseShare'
  | 'bind'
  | 'commitShare'
  | 'releaseUnused'
  | 'readSteps'
  | 'effect'
  | 'stepEffect'
  | 'recordStep'
  | 'txBegin'
  | 'txConfirm'
  | 'txInsert'
  | 'txCommit'
  | 'complete'
  | 'fail'
  | 'outcomeUnknown'
  | 'unbindShare'
  | 'giveBackShare';

/**
 * How a worker's turn at a call ends: the job done (`done` executed or
 * replayed, `ambiguous`, `denied`, `refused` by the limit, `notRun`: told
 * the model nothing ran, `corrupt`), or back to waiting (`wait`: parked,
 * `retry`: failed, to be delivered again).
 */
export type Ending = 'none' | 'done' | 'wait' | 'ambiguous' | 'denied' | 'refused' | 'retry' | 'notRun' | 'corrupt';

/** A worker's PostgreSQL transaction (see {@link Worker.txn}). */
export type Txn = 'none' | 'shared' | 'inserted' | 'blocked' | 'queued' | 'exclusive' | 'dead';

export interface Worker {
  pc: Pc;
  /** The call (and job) it works on; -1 when idle. */
  call: number;
  stopped: boolean;
  /** Its job was handed to another worker while it was stopped: what it reports no longer counts. */
  lockLost: boolean;
  /** The fence of the attempt it holds (or judges, in a reconcile), 0 none. */
  attempt: number;
  epoch: number;
  /** What its last receipt script saw, for the compare-and-set that follows. */
  seenStatus: ReceiptStatus;
  seenAttempts: number;
  seenEpoch: number;
  /** The token of its last claim (the epoch it minted, or the takeover's claim_token). */
  token: number;
  reconciles: number;
  /** A reconcile's verdict read from the outcome row: 0 not read, -1 not started, else the committed result. */
  verdict: number;
  /** The limit reservation it holds, 0 none. */
  reservation: number;
  /** The limit refused it, but the receipt had an answer, so it went on to the claim. */
  refused: boolean;
  /** The limit refused it while only the call's own reservation kept the window full. */
  refusedByOwn: boolean;
  /** Expired reservations its reserve reported, still to settle, and the call each is for; `settling` is the one in hand. */
  expired: number[];
  expiredCalls: number[];
  settling: number;
  /** A settle of this round of the reserve gave a share back (then the reserve is asked again). */
  reserveAgain: boolean;
  /** Reserves sent in this gate (the store asks at most 3 times). */
  rounds: number;
  /** Its reservation was bound to its attempt. */
  shareBound: boolean;
  /**
   * Its PostgreSQL transaction (see outcome-rows.ts): an attempt's holds the
   * lifetime's lock `shared`, then its row (`inserted`), or waits on
   * another's row (`blocked`); a takeover's asked for the lock exclusively
   * (`queued`: granted as soon as nobody holds it and no earlier request
   * waits, see holdsExclusive), then reads under it (`exclusive`); `dead`
   * once its session was ended.
   */
  txn: Txn;
  /** The step was recorded when this attempt read the steps. */
  stepKnown: boolean;
  /** A heartbeat was fenced out: the tool's signal is aborted, and nothing it does settles the receipt. */
  fencedOut: boolean;
  /** The result to complete with or report (a lost race's replay, a reconcile's answer), 0 none. */
  carried: number;
  ending: Ending;
  /** This turn at the call already claimed it again after an unknown outcome (it does so once). */
  afterUnknown: boolean;
  /** When its takeover asked for the lifetime's lock exclusively (a smaller one asked first, and is granted first), 0 none. */
  ticket: number;
}

/** What really happened to one lifetime of a call: the facts the invariants judge. */
export interface LifetimeGhost {
  readonly call: number;
  readonly epoch: number;
  /** Times the opaque effect happened. */
  effects: number;
  /** Outcome rows committed (the transactional write). */
  commits: number;
  /** The model was told that nothing ran. */
  toldNotRun: boolean;
  /** The result the receipt first completed with, 0 none. */
  completedWith: number;
  /** The attempt a claim flagged ambiguous, 0 none. */
  flaggedAttempt: number;
  /** The call ran its tool in this lifetime (an effect, a step, or a commit). */
  executed: boolean;
  /** A person approved (1) or denied (-1) this approval lifetime; 0 not decided. */
  decision: number;
  /** The last attempt a takeover's recorded verdict judged (it must never commit after that), 0 none. */
  judged: number;
}

export interface ProtocolState {
  receipts: Receipt[];
  /** Outcome rows per call. */
  rows: OutcomeRow[][];
  limit: LimitCount;
  jobs: JobStatus[];
  workers: Worker[];
  /** Per call: the epoch of the pending approval the approver has open in a form, 0 none. */
  forms: number[];
  budgets: Budgets;
  /** Next id to mint per call (epochs and tokens), and for reservations. */
  nextId: number[];
  nextReservation: number;
  /** Next ticket of a request for a lifetime's lock. */
  nextTicket: number;
  ghosts: LifetimeGhost[];
  /** Per call: approve decisions written, and lifetimes in which the call ran its tool. */
  approves: number[];
  runs: number[];
}

/** A receipt that does not exist. */
export function absentReceipt(): Receipt {
  return {
    status: 'absent',
    attempts: 0,
    epoch: 0,
    effect: 'opaque',
    lease: 0,
    ambiguous: false,
    result: 0,
    neverStarted: false,
    token: 0,
    reconciles: 0,
    reconcileLease: 0,
    step: false,
    approvalEpoch: 0,
    approvalLeft: 0,
    decidedBy: 'none',
    limitHolder: 0,
    limitAttempt: 0,
    renewed: false,
  };
}

export function idleWorker(): Worker {
  return {
    pc: 'idle',
    call: -1,
    stopped: false,
    lockLost: false,
    attempt: 0,
    epoch: 0,
    seenStatus: 'absent',
    seenAttempts: 0,
    seenEpoch: 0,
    token: 0,
    reconciles: 0,
    verdict: 0,
    reservation: 0,
    refused: false,
    refusedByOwn: false,
    expired: [],
    expiredCalls: [],
    settling: 0,
    reserveAgain: false,
    rounds: 0,
    shareBound: false,
    txn: 'none',
    stepKnown: false,
    fencedOut: false,
    carried: 0,
    ending: 'none',
    afterUnknown: false,
    ticket: 0,
  };
}

/** The state a scenario starts from: nothing on the servers, every job waiting, every worker idle. */
export function initialState(scenario: Scenario): ProtocolState {
  return {
    receipts: scenario.calls.map(absentReceipt),
    rows: scenario.calls.map(() => []),
    limit: { used: 0, pending: 0, reservations: [], pendingFor: scenario.calls.map(() => 0), bindings: new Map() },
    jobs: scenario.calls.map(() => 'waiting'),
    workers: Array.from({ length: scenario.workers }, idleWorker),
    forms: scenario.calls.map(() => 0),
    budgets: { ...scenario.budgets },
    nextId: scenario.calls.map(() => 1),
    nextReservation: 1,
    nextTicket: 1,
    ghosts: [],
    approves: scenario.calls.map(() => 0),
    runs: scenario.calls.map(() => 0),
  };
}

/** A deep copy: transitions copy the state, then change the copy. */
export function cloneState(s: ProtocolState): ProtocolState {
  return {
    receipts: s.receipts.map((r) => ({ ...r })),
    rows: s.rows.map((rows) => rows.map((row) => ({ ...row }))),
    limit: {
      used: s.limit.used,
      pending: s.limit.pending,
      reservations: s.limit.reservations.map((r) => ({ ...r })),
      pendingFor: [...s.limit.pendingFor],
      bindings: new Map(s.limit.bindings),
    },
    jobs: [...s.jobs],
    workers: s.workers.map((w) => ({ ...w, expired: [...w.expired], expiredCalls: [...w.expiredCalls] })),
    forms: [...s.forms],
    budgets: { ...s.budgets },
    nextId: [...s.nextId],
    nextReservation: s.nextReservation,
    nextTicket: s.nextTicket,
    ghosts: s.ghosts.map((g) => ({ ...g })),
    approves: [...s.approves],
    runs: [...s.runs],
  };
}

/** Mints the next id of `call`'s namespace (an epoch or a claim token). */
export function mintId(s: ProtocolState, call: number): number {
  return s.nextId[call]!++;
}

/** The ghost of lifetime `epoch` of `call`, made on first use. */
export function ghostOf(s: ProtocolState, call: number, epoch: number): LifetimeGhost {
  let ghost = s.ghosts.find((g) => g.call === call && g.epoch === epoch);
  if (ghost === undefined) {
    ghost = {
      call,
      epoch,
      effects: 0,
      commits: 0,
      toldNotRun: false,
      completedWith: 0,
      flaggedAttempt: 0,
      executed: false,
      decision: 0,
      judged: 0,
    };
    s.ghosts.push(ghost);
  }
  return ghost;
}

/** The result id an attempt completes with; an operator's resolve completes with {@link OPERATOR_RESULT}. */
export const resultOf = (attempt: number): number => attempt;
export const OPERATOR_RESULT = 99;
