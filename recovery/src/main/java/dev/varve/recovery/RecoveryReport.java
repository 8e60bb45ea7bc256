package dev.varve.recovery;

import java.util.concurrent.TimeUnit;

/**
 * What recovery did at open.
 *
 * @param restoredFrom   "none", "recovery files" or "physical wal"
 * @param restoredPages  pages put back by binary restore
 * @param replayedRecords logical records replayed
 * @param walTailCut     description of a torn WAL tail that was cut, or null
 * @param checkpointPending true when the pages replay changed are still dirty: the caller requests the checkpoint
 *                       that makes them durable (recovery's own final checkpoint was left to the background)
 * @param nanos          wall time
 */
public record RecoveryReport(String restoredFrom, int restoredPages, long replayedRecords, String walTailCut,
                             boolean checkpointPending, long nanos) {
    @Override
    public String toString() {
        return "recovery: binary restore from " + restoredFrom + " (" + restoredPages + " pages), " + replayedRecords
                + " logical records replayed" + (walTailCut == null ? "" : ", WAL tail cut: " + walTailCut)
                + (checkpointPending ? ", checkpoint of the replayed pages left to the background" : "")
                + ", " + TimeUnit.NANOSECONDS.toMillis(nanos) + " ms";
    }
}
