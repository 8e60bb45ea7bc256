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
 * Kill -9 of a child JVM whose batches keep removing and replacing 1 MiB values in an 8 MiB region
 * ({@link KillWorkload#FREEING}): a live write reserves the overflow chains it frees, and replay, which cannot read
 * them before the records ahead are applied, reserves the most they can be, so the reopen replays every batch since
 * the last checkpoint without running out of clean pages, in both recovery modes.
 */
@Timeout(300)
class KillWhileFreeingLargeValuesTest {
    @TempDir
    Path tmp;

    /** Two rounds by default, one written in each recovery mode. */
    @Test
    void killedWhileBatchesFreeLargeValuesRecoversEveryAcknowledgedBatch() throws Exception {
        run(Integer.getInteger("varve.killRounds", 2));
    }

    /** Forty rounds (-Plong -Dgroups=long), or -Dvarve.killRounds. */
    @Test
    @Tag("long")
    @Timeout(value = 2, unit = TimeUnit.HOURS)
    void manyKillsWhileFreeingLargeValues() throws Exception {
        run(Integer.getInteger("varve.killRounds", 40));
    }

    private void run(int rounds) throws Exception {
        Path dir = tmp.resolve("store");
        Path ack = tmp.resolve("ack");
        Path log = tmp.resolve("child.log");
        long applied = 0;
        for (int round = 0; round < rounds; round++) {
            RecoveryMode mode = round % 2 == 0 ? RecoveryMode.WAL_PHYSICAL : RecoveryMode.CHECKPOINT_RECOVERY_FILE;
            String where = "round " + round + " (" + mode + ")";
            long acked = FixtureChildJvm.killUnderLoad(KillWorkload.class, dir, mode, applied, ack, log, 2000, where,
                    WalSyncMode.LOG_ONLY.name(), "FREEING");
            assertTrue(acked > applied, where + ": child acknowledged nothing");
            try (Varve store = Varve.open(KillWorkload.config(KillWorkload.FREEING, dir, mode, WalSyncMode.LOG_ONLY))) {
                applied = KillWorkload.recoveredBatches(KillWorkload.FREEING, store, acked, where);
            }
        }
        System.out.println("kill -9 while freeing large values: " + applied + " batches");
    }

}
