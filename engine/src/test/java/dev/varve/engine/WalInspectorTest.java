package dev.varve.engine;

import dev.varve.config.RecoveryCompression;
import dev.varve.config.RecoveryMode;
import dev.varve.config.VarveConfig;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link WalInspector} names the physical records of a {@code WAL_PHYSICAL} store and tells what each restores: the
 * page, an image's left-out middle, a delta's ranges, a rebuild's source page.
 */
@Timeout(120)
class WalInspectorTest {
    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(value = RecoveryCompression.class, names = {"SKIP_GARBAGE", "SNAPPY"})
    void physicalRecordsShowTheirPageAndHowTheyRestoreIt(RecoveryCompression compression) throws Exception {
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(16L << 20).partitions(1).recoveryMode(RecoveryMode.WAL_PHYSICAL)
                .recoveryCompression(compression).checkpointFrequency(Duration.ofHours(1))
                .checkpointBufferSize(4L << 20).captureBufferSize(1L << 20).walSegmentSize(4L << 20).build();
        SplittableRandom r = new SplittableRandom(5);
        Varve store = Varve.open(config);
        Table t = store.table("t");
        for (int i = 0; i < 2_000; i++) t.put(key(r), new byte[200]);
        store.checkpoint().get(60, TimeUnit.SECONDS);
        for (int i = 0; i < 2_000; i++) t.put(key(r), new byte[200]); // after the mark: images, then deltas and splits
        store.halt();
        Map<String, String> detailByType = new HashMap<>();
        WalInspector.read(config, 0, rec -> {
            detailByType.putIfAbsent(rec.type(), rec.detail());
            return true;
        }, damage -> {
            throw new AssertionError("unread WAL damage: " + damage);
        });
        if (compression == RecoveryCompression.SNAPPY)
            assertTrue(detailByType.getOrDefault("PAGE_IMAGE_SNAPPY", "").matches("page \\S+, compressed"), detailByType.toString());
        else
            assertTrue(detailByType.getOrDefault("PAGE_IMAGE_SKIP_GARBAGE", "").matches("page \\S+ without \\[\\d+, \\d+\\)"), detailByType.toString());
        assertTrue(detailByType.getOrDefault("PAGE_DELTA", "").matches("page \\S+, \\d+ ranges"), detailByType.toString());
        assertTrue(detailByType.getOrDefault("PAGE_REBUILD", "").matches("page \\S+( \\(new\\))? from page \\S+, \\d+ ops"), detailByType.toString());
    }

    private static byte[] key(SplittableRandom r) {
        return ByteBuffer.allocate(Long.BYTES).putLong(r.nextLong(1_000_000)).array();
    }
}
