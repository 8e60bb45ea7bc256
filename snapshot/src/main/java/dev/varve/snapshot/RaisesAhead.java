package dev.varve.snapshot;

import java.util.HashMap;
import java.util.Map;

/**
 * The rank raises replay has still to apply, by snapshot id, with how many records of each: while it replays, a
 * verdict of the policy or the budget on such a snapshot waits ({@link SnapshotRegistry#enforce},
 * {@link SnapshotRegistry#dropForBudget}). A raise's record is appended only while its snapshot is live (the raise
 * finds it under the append gate, which every drop takes, and a refused raise logs nothing), so the live run had not
 * dropped the snapshot before that record. A drop replay decides earlier is one the live run never made: replay reads
 * no clock, and the policy's clock it goes on from cannot always repeat the live run's reads (a correction, a step back
 * after the checkpoint, a declaring thread paused between its clock read and the lock), and the drop would lose a raise
 * acknowledged before the crash. Guarded by the archive's state lock.
 */
final class RaisesAhead {
    private final Map<Long, Integer> ahead = new HashMap<>();

    /** Replay will apply a raise of each of {@code ids}, one per record (an id raised twice is there twice; none once it is over). */
    void expect(long[] ids) {
        ahead.clear();
        for (long id : ids) ahead.merge(id, 1, Integer::sum);
    }

    /** Whether a raise of {@code id} is still to be replayed: the live run kept the snapshot at least until then. */
    boolean holds(long id) {
        return ahead.containsKey(id);
    }

    /** One raise of {@code id} was replayed. */
    void replayed(long id) {
        ahead.computeIfPresent(id, (k, n) -> n == 1 ? null : n - 1);
    }
}
