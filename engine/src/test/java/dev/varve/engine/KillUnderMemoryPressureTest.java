package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Kill -9 of a child JVM whose data set outgrows its data region ({@link KillWorkload#PRESSURE}: an 8 MiB region, a
 * 256 KiB checkpoint buffer, 1 MiB values), alternating the recovery mode it writes in and the one it is reopened
 * in: every acknowledged batch is there after reopen (plus at most the one in flight, whole), while clean pages
 * were evicted and read back and checkpoints ran with the buffer overflowing.
 */
@Timeout(600)
class KillUnderMemoryPressureTest {
    @TempDir
    Path tmp;

    /**
     * Two rounds by default, one written in each recovery mode. A round is killed a few seconds in, and on a busy machine
     * the child acknowledges fewer batches in that time: the data set carries over from round to round, so more rounds
     * run (up to eight) until it has outgrown the region.
     */
    @Test
    void killedWhileTheDataSetOutgrowsTheRegionRecoversEveryAcknowledgedBatch() throws Exception {
        assertTrue(run(KillWorkload.PRESSURE, "PRESSURE", Integer.getInteger("varve.killRounds", 2), 8) > 0,
                "the data set never outgrew the region in eight rounds: no page was evicted");
    }

    /** Forty rounds (-Plong -Dgroups=long), or -Dvarve.killRounds. */
    @Test
    @Tag("long")
    @Timeout(value = 2, unit = TimeUnit.HOURS)
    void manyKillsUnderMemoryPressure() throws Exception {
        int rounds = Integer.getInteger("varve.killRounds", 40);
        run(KillWorkload.PRESSURE, "PRESSURE", rounds, rounds);
    }

    /**
     * Batches that keep removing and replacing 1 MiB values in the 8 MiB region ({@link KillWorkload#FREEING}): a live
     * write reserves the overflow chains it frees, and replay, which cannot read them before the records ahead are
     * applied, reserves the most they can be, so the reopen replays every batch since the last checkpoint without
     * running out of clean pages.
     */
    @Test
    void killedWhileBatchesFreeLargeValuesRecoversEveryAcknowledgedBatch() throws Exception {
        int rounds = Integer.getInteger("varve.killRounds", 2);
        run(KillWorkload.FREEING, "FREEING", rounds, rounds);
    }

    /** Forty rounds (-Plong -Dgroups=long), or -Dvarve.killRounds. */
    @Test
    @Tag("long")
    @Timeout(value = 2, unit = TimeUnit.HOURS)
    void manyKillsWhileFreeingLargeValues() throws Exception {
        int rounds = Integer.getInteger("varve.killRounds", 40);
        run(KillWorkload.FREEING, "FREEING", rounds, rounds);
    }

    /**
     * Kills and reopens {@code rounds} times, then more while no page was evicted, up to {@code maxRounds}; returns the
     * pages evicted while checking.
     */
    private long run(KillWorkload.Shape shape, String shapeArg, int rounds, int maxRounds) throws Exception {
        Path dir = tmp.resolve("store");
        Path ack = tmp.resolve("ack");
        Path log = tmp.resolve("child.log");
        long applied = 0;
        long evicted = 0;
        for (int round = 0; round < rounds || evicted == 0 && round < maxRounds; round++) {
            RecoveryMode mode = round % 2 == 0 ? RecoveryMode.CHECKPOINT_RECOVERY_FILE : RecoveryMode.WAL_PHYSICAL;
            RecoveryMode reopen = round % 2 == 0 ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
            String where = shapeArg + " round " + round + " (" + mode + " -> " + reopen + ")";
            long acked = FixtureChildJvm.killUnderLoad(KillWorkload.class, dir, mode, applied, ack, log, 2500 + 500L * (round % 4), where,
                    WalSyncMode.LOG_ONLY.name(), shapeArg);
            assertTrue(acked > applied, where + ": child acknowledged nothing");
            try (Varve store = Varve.open(KillWorkload.config(shape, dir, reopen, WalSyncMode.LOG_ONLY))) {
                applied = KillWorkload.recoveredBatches(shape, store, acked, where);
                evicted += store.metrics().pagesEvicted();
            }
        }
        System.out.println("kill -9, " + shapeArg + ": " + applied + " batches, " + evicted + " pages evicted while checking");
        return evicted;
    }
}
