package dev.varve.snapshot;

import dev.varve.config.ConfigLimits;
import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An archive's settings start at the store's defaults, and a bad one is refused with an error naming its field. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ArchiveSettingsTest {
    private static final Path DIR = Path.of("archive");
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepAll());

    @Test
    void unsetFieldsTakeTheStoresDefaults() {
        ArchiveSettings s = ArchiveSettings.builder(DIR, POLICY).build();
        assertEquals(DIR, s.dir());
        assertEquals(POLICY, s.retention());
        assertEquals(ConfigLimits.PAGE_SIZE_DEFAULT, s.pageSize());
        assertEquals(ConfigLimits.SKIPPY_LEVELS_DEFAULT, s.skippyLevels());
        assertEquals(ConfigLimits.SKIPPY_NODE_ENTRIES_DEFAULT, s.skippyNodeEntries());
        assertEquals(ConfigLimits.CAPTURE_BUFFER_SIZE_DEFAULT, s.captureBufferBytes());
        assertEquals(ConfigLimits.ARCHIVE_SEGMENT_SIZE_DEFAULT, s.segmentBytes());
        assertEquals(ConfigLimits.SNAPSHOT_PAGE_WINDOW_DEFAULT, s.pageWindow());
        assertEquals(ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT, s.diffChain());
    }

    @Test
    void everySetterReachesItsField() {
        ArchiveSettings s = ArchiveSettings.builder(DIR, POLICY).pageSize(8192).skippyLevels(0).skippyNodeEntries(16).captureBufferBytes(1L << 20)
                .segmentBytes(256L << 10).pageWindow(0).diffChain(3).storeId(7).build();
        assertEquals(new ArchiveSettings(DIR, 8192, 0, 16, 1L << 20, 256L << 10, POLICY, 0, 3, 7), s);
    }

    @Test
    void aMissingDirectoryOrPolicyIsNamed() {
        refused("dir", () -> ArchiveSettings.builder(null, POLICY).build());
        refused("retention", () -> ArchiveSettings.builder(DIR, null).build());
    }

    @Test
    void aPageSizeThatIsNoPowerOfTwoOrOutOfRangeIsNamed() {
        refused("pageSize", b -> b.pageSize(3000).captureBufferBytes(3000L * 100));
        refused("pageSize", b -> b.pageSize(ConfigLimits.PAGE_SIZE_MIN / 2));
        refused("pageSize", b -> b.pageSize(ConfigLimits.PAGE_SIZE_MAX * 2));
    }

    @Test
    void skippyShapeOutOfRangeIsNamed() {
        refused("skippyLevels", b -> b.skippyLevels(-1));
        refused("skippyLevels", b -> b.skippyLevels(ConfigLimits.SKIPPY_LEVELS_MAX + 1));
        refused("skippyNodeEntries", b -> b.skippyNodeEntries(ConfigLimits.SKIPPY_NODE_ENTRIES_MIN - 1));
    }

    @Test
    void aDiffChainOutOfRangeIsNamed() {
        refused("diffChain", b -> b.diffChain(-1));
        refused("diffChain", b -> b.diffChain(ConfigLimits.SNAPSHOT_DIFF_CHAIN_MAX + 1));
    }

    @Test
    void aCaptureBufferTooSmallOrNotWholePagesIsNamed() {
        refused("captureBufferBytes", b -> b.captureBufferBytes(ConfigLimits.CAPTURE_BUFFER_SIZE_MIN - 4096));
        refused("captureBufferBytes", b -> b.captureBufferBytes((1L << 20) + 1));
    }

    @Test
    void aSegmentOrWindowOutOfRangeIsNamed() {
        refused("segmentBytes", b -> b.segmentBytes(0));
        refused("segmentBytes", b -> b.segmentBytes(ConfigLimits.ARCHIVE_SEGMENT_SIZE_MAX + 1));
        refused("pageWindow", b -> b.pageWindow(-1));
    }

    private static void refused(String field, UnaryOperator<ArchiveSettings.Builder> bad) {
        refused(field, () -> bad.apply(ArchiveSettings.builder(DIR, POLICY)).build());
    }

    private static void refused(String field, org.junit.jupiter.api.function.Executable build) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, build);
        assertTrue(e.getMessage().startsWith(field + " "), "the error names " + field + ": " + e.getMessage());
    }
}
