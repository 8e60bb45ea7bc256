package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FaultyFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link Varve#sync()} under {@code LOG_ONLY}, whose writes survive a killed process but not a power loss: what
 * returned before it — writes and a snapshot declaration — is back after a power loss, in both recovery modes. The
 * same load without the call loses them in some of the same power losses, so the check is not vacuous.
 */
@Timeout(120)
class SyncTest {
    private static final int KEYS = 500;
    private static final long[] SEEDS = {1, 2, 3};

    @TempDir
    Path dir;

    @Test
    void whatReturnedBeforeSyncSurvivesAPowerLoss() {
        for (RecoveryMode mode : RecoveryMode.values()) {
            for (long seed : SEEDS) {
                Path store = dir.resolve(mode + "-" + seed);
                Outcome o = runAndCutThePower(store, mode, seed, true);
                assertTrue(o.writesBack && o.snapshotBack, mode + ", seed " + seed + ": " + o);
            }
        }
    }

    @Test
    void withoutSyncThePowerLossTakesThem() {
        int lost = 0;
        for (long seed : SEEDS) {
            Outcome o = runAndCutThePower(dir.resolve("unsynced-" + seed), RecoveryMode.CHECKPOINT_RECOVERY_FILE, seed, false);
            if (!o.writesBack || !o.snapshotBack) lost++;
        }
        assertTrue(lost > 0, "a power loss took unsynced LOG_ONLY writes in none of " + SEEDS.length + " trials");
    }

    @Test
    void aReadOnlyOrClosedStoreRefusesIt() {
        VarveConfig config = FixtureSupport.small(dir).build();
        Varve store = Varve.open(config);
        store.table("t").put(utf8("k"), utf8("v"));
        store.close();
        assertThrows(IllegalStateException.class, store::sync);
        try (Varve readOnly = Varve.openReadOnly(config)) {
            assertThrows(ReadOnlyStoreException.class, readOnly::sync);
        }
    }

    /**
     * Opens the store after the power loss. Under {@code LOG_ONLY} a power loss may leave a record whose length reached
     * the disk and whose body did not, which open refuses as damage: the operator's way on is to cut the WAL there
     * (it lies past every forced record).
     */
    private static Varve reopen(VarveConfig config) {
        try {
            return Varve.open(config);
        } catch (CorruptionException damagedTail) {
            return Varve.open(config, OpenOption.TRUNCATE_DAMAGED_WAL);
        }
    }

    private record Outcome(boolean writesBack, boolean snapshotBack) {
    }

    /** Puts {@link #KEYS} keys, declares a snapshot, syncs (or not), puts more, cuts the power and reopens. */
    private static Outcome runAndCutThePower(Path path, RecoveryMode mode, long seed, boolean sync) {
        VarveConfig config = FixtureSupport.small(path).recoveryMode(mode).build();
        FaultyFileIOFactory io = new FaultyFileIOFactory(seed);
        Varve store = Varve.open(config, io);
        Table t = store.table("t");
        for (int i = 0; i < KEYS; i++) t.put(utf8("k" + i), utf8("v" + i));
        long snapshot = store.snapshotNow();
        if (sync) store.sync();
        for (int i = 0; i < KEYS; i++) t.put(utf8("later" + i), utf8("w" + i));
        store.halt();
        io.powerLoss();
        try (Varve reopened = reopen(config)) {
            Table back = reopened.table("t");
            int found = 0;
            for (int i = 0; i < KEYS; i++) {
                byte[] v = back.get(utf8("k" + i));
                if (v != null) {
                    assertArrayEquals(utf8("v" + i), v, "key k" + i + " holds what was put");
                    found++;
                }
            }
            boolean snapshotBack = reopened.snapshots().stream().anyMatch(s -> s.id() == snapshot);
            return new Outcome(found == KEYS, snapshotBack);
        }
    }
}
