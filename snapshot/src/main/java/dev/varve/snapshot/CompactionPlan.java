package dev.varve.snapshot;

/**
 * What {@link SnapshotRegistry#compactLogs} and the move log's compaction may let go, decided under the state lock
 * after a checkpoint's end marker ({@link SnapshotRegistry#compactionPlan}).
 *
 * @param horizon    every snapshot below it dropped, and declared before the mark: what a log may let go of when
 *                   {@code live} is not known
 * @param logHorizon the latest snapshot the mark counts (its own latest declaration stays): every snapshot up to
 *                   it is dropped unless {@code live} holds it
 * @param live       the live snapshots up to {@code logHorizon}, sorted; null when no log was due
 * @param logDue     whether the snapshot log is to be compacted below {@code logHorizon}
 */
record CompactionPlan(long horizon, long logHorizon, long[] live, boolean logDue) {
    /**
     * Whether a log must keep what it holds of snapshot {@code id}: live, or declared after the mark — or, when the
     * live snapshots were not taken (the log grew to its threshold only after the plan), at or above the oldest live
     * one.
     */
    boolean keeps(long id) {
        if (live == null) return id >= horizon;
        return id > logHorizon || java.util.Arrays.binarySearch(live, id) >= 0;
    }
}
