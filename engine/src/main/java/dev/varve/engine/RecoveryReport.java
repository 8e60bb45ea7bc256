package dev.varve.engine;

/**
 * What recovery did when the store was opened ({@link Varve#recoveryReport()}). A read-only view of what recovery
 * recorded, so recovery's own type stays internal.
 */
public final class RecoveryReport {
    private final dev.varve.recovery.RecoveryReport r;

    private RecoveryReport(dev.varve.recovery.RecoveryReport r) {
        this.r = r;
    }

    /** The public view of recovery's report. */
    static RecoveryReport of(dev.varve.recovery.RecoveryReport r) {
        return new RecoveryReport(r);
    }

    /** Where binary restore took pages from: "none", "recovery files" or "physical wal". */
    public String restoredFrom() {
        return r.restoredFrom();
    }

    /** Pages put back by binary restore. */
    public int restoredPages() {
        return r.restoredPages();
    }

    /** Logical WAL records replayed. */
    public long replayedRecords() {
        return r.replayedRecords();
    }

    /** What torn WAL tail was cut, or null when none. */
    public String walTailCut() {
        return r.walTailCut();
    }

    /** Wall time of recovery, nanoseconds. */
    public long nanos() {
        return r.nanos();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RecoveryReport other && r.equals(other.r);
    }

    @Override
    public int hashCode() {
        return r.hashCode();
    }

    @Override
    public String toString() {
        return r.toString();
    }
}
