package dev.varve.snapshot;

import java.util.function.LongPredicate;
import java.util.function.LongSupplier;

/**
 * The registry's answers about what it dropped: recent drops from the drop log's memory, older ones from the drop log
 * itself, and those below the snapshot log's horizon as dropped by the horizon's time. Read under the archive's state
 * lock, except the horizon (it only grows); {@link DropQueries} reads the drop log outside that lock. Kept apart from
 * {@link SnapshotRegistry}, which decides the drops, so that the one class does not both keep and explain them.
 */
final class RegistryDrops {
    private final SnapshotLog log;
    private final DropLog drops;
    private final LongPredicate live;
    /** The registry's latest snapshot id handed out ({@link SnapshotRegistry#latest}). */
    private final LongSupplier latest;

    RegistryDrops(SnapshotLog log, DropLog drops, LongPredicate live, LongSupplier latest) {
        this.log = log;
        this.drops = drops;
        this.live = live;
        this.latest = latest;
    }

    /**
     * Why {@code id} is no longer live — from memory for recent drops, else from the drop log, else, below the snapshot
     * log's horizon, as a drop whose record was compacted away ({@link #forgotten}) — or null.
     */
    DroppedSnapshot dropped(long id) {
        DroppedSnapshot recent = drops.recent(id);
        if (recent != null) return recent;
        if (inDropLog(id)) {
            DroppedSnapshot found = DropLogLookup.find(drops.file(), id, drops.count());
            if (found != null) return found; // the log still details it, below the horizon or not
        }
        return forgotten(id);
    }

    /**
     * A recent drop, or one below the horizon whose entry the drop log no longer holds — known only as dropped by the
     * horizon's time — from memory alone; else null.
     */
    DroppedSnapshot forgotten(long id) {
        DroppedSnapshot recent = drops.recent(id);
        if (recent != null) return recent;
        if (id >= 1 && id < log.horizon() && !live.test(id)) // a live one below it kept its records
            return new DroppedSnapshot(id, log.horizonMillis(), "when and why are no longer kept: the records of the snapshots below " + log.horizon()
                    + " dropped by then were compacted away", true);
        return null;
    }

    /** The drop of {@code id} if it is among the recent ones, which say why in full; else null. */
    DroppedSnapshot recentDrop(long id) {
        return drops.recent(id);
    }

    /**
     * True when {@link #dropped} has to read the drop log for {@code id}: it is not a recent drop, not live, and was
     * declared (so it was dropped: its drop is in the log, or below the horizon was compacted away).
     */
    boolean inDropLog(long id) {
        return drops.recent(id) == null && id <= latest.getAsLong() && !live.test(id);
    }

    /** The drop log: entries below the count read under the guard stay as they are, though a compaction may remove the oldest. */
    MaplogFile dropLog() {
        return drops.file();
    }

    /** See {@link SnapshotArchive#dropHorizon}: the snapshot log's horizon (read without a lock: it only grows). */
    long dropHorizon() {
        return log.horizon();
    }

    long dropHorizonMillis() {
        return log.horizonMillis();
    }
}
