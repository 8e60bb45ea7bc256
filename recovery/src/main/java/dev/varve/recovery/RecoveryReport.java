package dev.varve.recovery;

import java.util.concurrent.TimeUnit;

/**
 * What recovery did at open.
 *
 * @param restoredFrom   "none", "recovery files" or "physical wal"
 * @param restoredPages  pages put back by binary restore
 * @param replayedRecords logical records replayed
 * @param walTailCut     description of a torn WAL tail that was cut, or null
 * @param nanos          wall time
 */
public record RecoveryReport(String restoredFrom, int restoredPages, long replayedRecords, String walTailCut, long nanos) {
    @Override
    public String toString() {
        return "recovery: binary restore from " + restoredFrom + " (" + restoredPages + " pages), " + replayedRecords
                + " logical records replayed" + (walTailCut == null ? "" : ", WAL tail cut: " + walTailCut)
                + ", " + TimeUnit.NANOSECONDS.toMillis(nanos) + " ms";
    }
}
