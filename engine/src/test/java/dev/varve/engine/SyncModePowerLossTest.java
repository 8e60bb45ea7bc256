package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.agent.AgentInvoker;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FaultyFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * What each {@code walSyncMode} promises against a power loss (the fault-injection file seam), checked against a model
 * of the writes with fixed seeds: the store comes back in the state after some prefix of the returned writes — never
 * with a hole, a value that was never written or a write from the future — and that prefix is at least what the mode
 * promised: every returned write under {@code FSYNC}; what returned before {@code sync()} under {@code LOG_ONLY}; what
 * returned before the background flusher's force under {@code BACKGROUND}; everything after {@code close()}, in any
 * mode. The load crosses a WAL segment switch and a checkpoint.
 */
@Timeout(300)
class SyncModePowerLossTest {
    private static final long[] SEEDS = {11, 12};
    private static final int KEYS = 40;
    private static final int OPS = 700;

    @TempDir
    Path dir;

    @Test
    void fsyncKeepsEveryReturnedWriteAndDeclaration() {
        for (long seed : SEEDS) {
            for (RecoveryMode mode : RecoveryMode.values()) {
                Run r = new Run(dir.resolve("fsync-" + mode + "-" + seed), WalSyncMode.FSYNC, mode, seed, Agents.dedicated());
                long snapshot = r.write(OPS / 2, true);
                r.checkpoint();
                r.write(OPS, true);
                r.powerLoss(OPS, snapshot);
            }
        }
    }

    @Test
    void logOnlyKeepsWhatReturnedBeforeSync() {
        for (long seed : SEEDS) {
            Run r = new Run(dir.resolve("log-only-" + seed), WalSyncMode.LOG_ONLY, RecoveryMode.CHECKPOINT_RECOVERY_FILE, seed, Agents.dedicated());
            r.write(OPS / 3, true);
            r.checkpoint();
            long snapshot = r.write(2 * OPS / 3, true);
            r.store.sync();
            r.write(OPS, false);
            r.powerLoss(2 * OPS / 3, snapshot);
        }
    }

    /**
     * sync() right after a segment switch, while the old segment may still be being forced and the new one is under
     * its temporary name, with directory entries lost at the power loss unless their directory was fsynced.
     */
    @Test
    void logOnlyKeepsWhatReturnedBeforeASyncRightAfterASegmentSwitch() {
        for (long seed : SEEDS) {
            for (RecoveryMode mode : RecoveryMode.values()) {
                Run r = new Run(dir.resolve("switch-" + mode + "-" + seed), WalSyncMode.LOG_ONLY, mode, seed, Agents.dedicated());
                r.io.strictDirectoryEntries(true);
                long segment = r.config.walSegmentSize();
                int synced = 0;
                while (r.store.engine().wal.position() / segment == 0) synced = r.write(synced + 1);
                r.store.sync();
                r.write(synced + 20);
                r.powerLoss(synced, -1);
            }
        }
    }

    @Test
    void backgroundKeepsWhatReturnedBeforeTheFlushersForce() throws InterruptedException {
        for (long seed : SEEDS) {
            Agents agents = Agents.invoked(); // the flusher forces exactly when the test steps it
            // small values: no checkpoint is needed to make room, so none waits for a checkpointer nobody steps
            Run r = new Run(dir.resolve("background-" + seed), WalSyncMode.BACKGROUND, RecoveryMode.WAL_PHYSICAL, seed, agents);
            long snapshot = r.write(OPS / 2, true);
            AgentInvoker flusher = agents.invoker("wal-flusher");
            while (flusher.invoke() == 0) Thread.sleep(1); // its period (1 ms) passes, then one force
            r.write(OPS, false);
            r.powerLoss(OPS / 2, snapshot);
        }
    }

    /** The same with the flusher on its own thread, as in production: once it has forced them, the writes are safe. */
    @Test
    void backgroundsFlusherThreadMakesTheWritesDurable() throws InterruptedException {
        Run r = new Run(dir.resolve("background-thread"), WalSyncMode.BACKGROUND, RecoveryMode.CHECKPOINT_RECOVERY_FILE, 7, Agents.dedicated());
        long snapshot = r.write(OPS / 2, true);
        long appended = r.store.engine().wal.position();
        while (r.store.engine().wal.durableLsn() < appended) Thread.sleep(1); // the test's timeout bounds the wait
        r.write(OPS, false);
        r.powerLoss(OPS / 2, snapshot);
    }

    @Test
    void closeKeepsEverythingInEveryMode() {
        for (WalSyncMode sync : WalSyncMode.values()) {
            Run r = new Run(dir.resolve("close-" + sync), sync, RecoveryMode.CHECKPOINT_RECOVERY_FILE, 5, Agents.dedicated());
            long snapshot = r.write(OPS, true);
            r.close();
            r.powerLoss(OPS, snapshot);
        }
    }

    /** One store under a seeded load, with the model: after op i (1-based), key -> the op that wrote its value. */
    private static final class Run {
        final VarveConfig config;
        final FaultyFileIOFactory io;
        final Varve store;
        final Random rnd;
        final boolean bigValues;
        final List<Map<Integer, Integer>> states = new ArrayList<>();
        /** Snapshot id -> the op it was declared after. */
        final Map<Long, Integer> declaredAt = new HashMap<>();

        Run(Path path, WalSyncMode sync, RecoveryMode mode, long seed, Agents agents) {
            config = FixtureSupport.small(path).recoveryMode(mode).walSyncMode(sync).walFlushFrequency(Duration.ofMillis(1)).build();
            io = new FaultyFileIOFactory(seed);
            store = Varve.open(config, io, agents);
            rnd = new Random(seed);
            bigValues = sync != WalSyncMode.BACKGROUND;
            states.add(new HashMap<>());
        }

        /** Runs ops up to {@code upTo}; returns it. */
        int write(int upTo) {
            write(upTo, false);
            return upTo;
        }

        /** Runs ops up to {@code upTo} and, with {@code declare}, a snapshot after them; returns its id (or -1). */
        long write(int upTo, boolean declare) {
            while (states.size() <= upTo) {
                int op = states.size();
                Map<Integer, Integer> next = new HashMap<>(states.get(op - 1));
                int kind = rnd.nextInt(10);
                if (kind < 6) {
                    int k = rnd.nextInt(KEYS);
                    store.table("t").put(key(k), value(k, op));
                    next.put(k, op);
                } else if (kind < 8) {
                    int k = rnd.nextInt(KEYS);
                    store.table("t").remove(key(k));
                    next.remove(k);
                } else {
                    int n = 1 + rnd.nextInt(5);
                    int[] ks = new int[n];
                    boolean[] puts = new boolean[n];
                    for (int i = 0; i < n; i++) {
                        ks[i] = rnd.nextInt(KEYS);
                        puts[i] = rnd.nextInt(4) > 0;
                        if (puts[i]) next.put(ks[i], op);
                        else next.remove(ks[i]);
                    }
                    store.write(b -> {
                        for (int i = 0; i < n; i++) {
                            if (puts[i]) b.put("t", key(ks[i]), value(ks[i], op));
                            else b.remove("t", key(ks[i]));
                        }
                    });
                }
                states.add(next);
            }
            if (!declare) return -1;
            long id = store.snapshotNow();
            declaredAt.put(id, upTo);
            return id;
        }

        boolean closed;

        void close() {
            store.close();
            closed = true;
        }

        void checkpoint() {
            store.checkpoint().join();
        }

        /** Key k's value written by op {@code op}: the op, then bytes that follow from both (a few KB when big). */
        byte[] value(int k, int op) {
            int length = 8 + (bigValues ? (op * 7919 + k) % 12_000 : (op + k) % 64);
            byte[] v = FixtureSupport.bytes(op * 1_000_003L + k, length);
            ByteBuffer.wrap(v).putInt(op).putInt(k);
            return v;
        }

        /**
         * Halts the store (unless closed), cuts the power and reopens: the state must be that after some op in
         * [{@code promised}, last], and snapshot {@code snapshot} (declared at or before {@code promised}) must be back.
         */
        void powerLoss(int promised, long snapshot) {
            String what = config.path() + " (" + config.walSyncMode() + ", " + config.recoveryMode() + ", seed " + io.seed() + ")";
            if (!closed) store.halt(); // the process dies without closing
            io.powerLoss();
            try (Varve back = reopen()) {
                Map<Integer, Integer> found = read(back.table("t"), what);
                int last = states.size() - 1;
                int at = -1;
                for (int i = last; i >= 0 && at < 0; i--) if (states.get(i).equals(found)) at = i;
                if (at < 0) fail(what + ": the state after the power loss is that after no prefix of the writes: " + found);
                assertTrue(at >= promised, what + ": back to the state after op " + at + " of " + last + ", but " + promised + " were promised");
                if (snapshot > 0) {
                    assertTrue(back.snapshots().stream().anyMatch(s -> s.id() == snapshot), what + ": snapshot " + snapshot + " lost");
                    try (SnapshotView v = back.asOf(snapshot)) { // its past values too, archived as later writes overwrote them
                        assertEquals(states.get(declaredAt.get(snapshot)), read(v.table("t"), what + ", snapshot " + snapshot), what + ": snapshot " + snapshot);
                    }
                }
            }
        }

        /** Key -> the op whose value it holds, checking each value is one that op wrote. */
        private Map<Integer, Integer> read(Table t, String what) {
            Map<Integer, Integer> found = new HashMap<>();
            for (int k = 0; k < KEYS; k++) {
                byte[] v = t.get(key(k));
                if (v == null) continue;
                int op = ByteBuffer.wrap(v).getInt();
                assertTrue(op > 0 && op < states.size() && Arrays.equals(value(k, op), v), what + ": key " + k + " holds a value never written");
                found.put(k, op);
            }
            return found;
        }

        /** Under LOG_ONLY and BACKGROUND a power loss may leave a torn last record, which the operator cuts (SyncTest). */
        private Varve reopen() {
            try {
                return Varve.open(config);
            } catch (CorruptionException damagedTail) {
                assertEquals(false, config.walSyncMode() == WalSyncMode.FSYNC, "an FSYNC store cuts its torn tail itself: " + damagedTail);
                return Varve.open(config, OpenOption.TRUNCATE_DAMAGED_WAL);
            }
        }
    }

    private static byte[] key(int k) {
        return utf8("key-" + k);
    }
}
