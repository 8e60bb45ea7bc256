package dev.varve.engine;

import dev.varve.config.WalSyncMode;
import dev.varve.engine.SnapshotCrashRun.Load;
import dev.varve.engine.SnapshotCrashRun.Run;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

/**
 * {@link AcknowledgedSnapshotPowerLossTest} and {@link AcknowledgedSnapshotProcessCrashTest} at every file operation
 * of the first 150 after the arming call, not a sample of them: some minutes on two cores, so only under -Plong.
 */
@Tag("long")
@Timeout(3600)
class AcknowledgedSnapshotEveryCrashPointTest {
    private static final int LAST_POINT = 150;

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(Load.class)
    void everyCrashPointKeepsEveryReturnedSnapshotAndRaise(Load load) throws Exception {
        for (int point = 1; point <= LAST_POINT; point++) {
            new Run(dir, load, WalSyncMode.FSYNC, point, false).crashAndCheck();
            new Run(dir, load, WalSyncMode.LOG_ONLY, point, false).crashAndCheck();
        }
    }
}
