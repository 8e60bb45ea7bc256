package dev.varve.engine;

import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotCrashRun.Load;
import dev.varve.engine.SnapshotCrashRun.Run;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

/**
 * Under {@code FSYNC}, a power loss at the n-th file operation after a {@code snapshotNow}, {@code writeAndSnapshot}
 * or {@code rank} returned, with three writers committing alongside so that declarations share group commits
 * (un-fsynced writes dropped or torn): every returned snapshot reads exactly as before, every returned raise is kept
 * ({@link SnapshotCrashRun}; every crash point up to 150: {@link AcknowledgedSnapshotEveryCrashPointTest}). The loads
 * cross WAL segment switches and checkpoints, a full capture buffer and keepLast windows that drop older snapshots.
 */
@Timeout(300)
class AcknowledgedSnapshotPowerLossTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(Load.class)
    void everyReturnedSnapshotAndRaiseSurvivesAPowerLoss(Load load) throws Exception {
        for (int point : SnapshotCrashRun.POINTS) new Run(dir, load, WalSyncMode.FSYNC, point, false).crashAndCheck();
    }

    /**
     * The n-th WAL write after a declaration returned is cut by the power with its torn sectors on disk: an FSYNC
     * commit writes its range with one pwrite, which starts in the sector the declaration's record ends in.
     */
    @ParameterizedTest
    @EnumSource(value = Load.class, names = {"GROUP_COMMITS", "SEGMENT_SWITCHES_AND_CHECKPOINTS"})
    void everyReturnedSnapshotSurvivesATornWalWrite(Load load) throws Exception {
        for (int point = 1; point <= 3; point++) new Run(dir, load, WalSyncMode.FSYNC, point, true).crashAndCheck();
    }
}
