package dev.varve.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@Timeout(180)
class VarveConfigTest {

    private static final long KiB = 1L << 10;
    private static final long MiB = 1L << 20;
    private static final long GiB = 1L << 30;
    private static final long TiB = 1L << 40;
    private static final Path DIR = Path.of("/tmp/varve-config-test");

    private static VarveConfig.Builder base() {
        return VarveConfig.builder().path(DIR);
    }

    @Test
    void defaults() {
        VarveConfig c = base().build();
        assertEquals(DIR, c.path());
        assertEquals(4096, c.pageSize());
        assertEquals(256 * MiB, c.dataRegionSize());
        assertEquals(16, c.partitions());
        assertEquals(RecoveryMode.CHECKPOINT_RECOVERY_FILE, c.recoveryMode());
        assertEquals(RecoveryCompression.SNAPPY, c.recoveryCompression());
        assertEquals(WalSyncMode.LOG_ONLY, c.walSyncMode());
        assertEquals(64 * MiB, c.walSegmentSize());
        assertEquals(Duration.ofSeconds(1), c.walFlushFrequency());
        assertEquals(Duration.ofSeconds(30), c.checkpointFrequency());
        assertEquals(2, c.checkpointThreads());
        assertEquals(4, c.recoveryThreads());
        assertEquals(64 * MiB, c.checkpointBufferSize());
        assertEquals(0.75, c.checkpointDirtyRatio());
        assertEquals(GiB, c.checkpointWalVolume());
        assertEquals(RankTreePolicy.keepEverything(), c.retention());
        assertEquals(DIR.resolve("archive"), c.archivePath());
    }

    @Test
    void pathIsRequired() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> VarveConfig.builder().build());
        assertEquals("path is required", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> VarveConfig.builder().path(java.nio.file.Path.of("")).build());
        assertTrue(e.getMessage().startsWith("path is empty"), e.getMessage());
    }

    @Test
    void messageNamesFieldRangeAndValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> base().pageSize(3000).build());
        assertEquals("pageSize must be a power of two in [1024, 16384], was 3000", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> base().dataRegionSize(7 * MiB).build());
        assertEquals("dataRegionSize must be in [8 MiB, 1 TiB], was 7340032 bytes", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> base().walFlushFrequency(Duration.ZERO).build());
        assertEquals("walFlushFrequency must be in [1ms, 1h], was PT0S", e.getMessage());
    }

    static Stream<Arguments> inside() {
        return Stream.of(
                arg("pageSize", b -> b.pageSize(1024)),
                arg("pageSize", b -> b.pageSize(2048)),
                arg("pageSize", b -> b.pageSize(16384)),
                arg("dataRegionSize", b -> b.dataRegionSize(8 * MiB)),
                arg("dataRegionSize", b -> b.dataRegionSize(TiB)),
                arg("partitions", b -> b.partitions(1)),
                arg("partitions", b -> b.partitions(1024)),
                arg("walSegmentSize", b -> b.walSegmentSize(4 * MiB)),
                arg("walSegmentSize", b -> b.walSegmentSize(GiB)),
                arg("walSegmentSize", b -> b.walSegmentSize(4 * MiB + 4096)),
                arg("walFlushFrequency", b -> b.walFlushFrequency(Duration.ofMillis(1))),
                arg("walFlushFrequency", b -> b.walFlushFrequency(Duration.ofHours(1))),
                arg("checkpointFrequency", b -> b.checkpointFrequency(Duration.ofMillis(1))),
                arg("checkpointFrequency", b -> b.checkpointFrequency(Duration.ofDays(1))),
                arg("checkpointThreads", b -> b.checkpointThreads(1)),
                arg("checkpointThreads", b -> b.checkpointThreads(64)),
                arg("recoveryThreads", b -> b.recoveryThreads(1)),
                arg("recoveryThreads", b -> b.recoveryThreads(64)),
                arg("checkpointBufferSize", b -> b.checkpointBufferSize(256 * KiB)),
                arg("checkpointBufferSize", b -> b.checkpointBufferSize(64 * GiB)),
                arg("checkpointDirtyRatio", b -> b.checkpointDirtyRatio(0.05)),
                arg("checkpointDirtyRatio", b -> b.checkpointDirtyRatio(0.95)),
                arg("checkpointWalVolume", b -> b.checkpointWalVolume(MiB)),
                arg("checkpointWalVolume", b -> b.checkpointWalVolume(TiB)),
                arg("skippyLevels", b -> b.skippyLevels(0)),
                arg("skippyLevels", b -> b.skippyLevels(8)),
                arg("skippyNodeEntries", b -> b.skippyNodeEntries(8)),
                arg("skippyNodeEntries", b -> b.skippyNodeEntries(65536)),
                arg("captureBufferSize", b -> b.captureBufferSize(256 * KiB)),
                arg("archiveSegmentSize", b -> b.archiveSegmentSize(256 * KiB)),
                arg("snapshotPageWindow", b -> b.snapshotPageWindow(0)),
                arg("snapshotPageWindow", b -> b.snapshotPageWindow(1048576)),
                arg("snapshotDiffChain", b -> b.snapshotDiffChain(0)),
                arg("snapshotDiffChain", b -> b.snapshotDiffChain(255)),
                arg("recoveryMode", b -> b.recoveryMode(RecoveryMode.WAL_PHYSICAL)),
                arg("recoveryCompression", b -> b.recoveryCompression(RecoveryCompression.DISABLED)),
                arg("walSyncMode", b -> b.walSyncMode(WalSyncMode.BACKGROUND)),
                arg("retention", b -> b.retention(RankTreePolicy.levels(Retention.keepLast(1)))),
                arg("archivePath", b -> b.archivePath(Path.of("/elsewhere"))),
                // cross-field: just enough pages, page-size multiples
                arg("dataRegionSize", b -> b.pageSize(16384).dataRegionSize(32 * MiB)),
                arg("dataRegionSize", b -> b.pageSize(1024).dataRegionSize(8 * MiB + 1024)),
                arg("checkpointBufferSize", b -> b.pageSize(1024).checkpointBufferSize(256 * KiB + 1024)),
                // a table of that many partitions fits half the region: 4 * 504 + 32 = 2048 pages
                arg("dataRegionSize", b -> b.partitions(504).dataRegionSize(8 * MiB)),
                arg("dataRegionSize", b -> b.partitions(1024).dataRegionSize(4128 * 4 * KiB)));
    }

    static Stream<Arguments> outside() {
        return Stream.of(
                arg("pageSize", b -> b.pageSize(512)),
                arg("pageSize", b -> b.pageSize(32768)),
                arg("pageSize", b -> b.pageSize(3000)),
                arg("pageSize", b -> b.pageSize(-4096)),
                arg("dataRegionSize", b -> b.dataRegionSize(8 * MiB - 4096)),
                arg("dataRegionSize", b -> b.dataRegionSize(TiB + 4096)),
                arg("partitions", b -> b.partitions(0)),
                arg("partitions", b -> b.partitions(1025)),
                arg("walSegmentSize", b -> b.walSegmentSize(4 * MiB - 4096)),
                arg("walSegmentSize", b -> b.walSegmentSize(GiB + 4096)),
                arg("walSegmentSize", b -> b.walSegmentSize(4 * MiB + 1)),
                arg("walFlushFrequency", b -> b.walFlushFrequency(Duration.ofNanos(999_999))),
                arg("walFlushFrequency", b -> b.walFlushFrequency(Duration.ofHours(1).plusMillis(1))),
                arg("walFlushFrequency", b -> b.walFlushFrequency(null)),
                arg("checkpointFrequency", b -> b.checkpointFrequency(Duration.ofMillis(1).minusNanos(1))),
                arg("checkpointFrequency", b -> b.checkpointFrequency(Duration.ofDays(1).plusNanos(1))),
                arg("checkpointFrequency", b -> b.checkpointFrequency(Duration.ofSeconds(-1))),
                arg("checkpointThreads", b -> b.checkpointThreads(0)),
                arg("checkpointThreads", b -> b.checkpointThreads(65)),
                arg("recoveryThreads", b -> b.recoveryThreads(0)),
                arg("recoveryThreads", b -> b.recoveryThreads(65)),
                arg("checkpointBufferSize", b -> b.checkpointBufferSize(256 * KiB - 4096)),
                arg("checkpointBufferSize", b -> b.checkpointBufferSize(64 * GiB + 4096)),
                arg("checkpointDirtyRatio", b -> b.checkpointDirtyRatio(0.0499)),
                arg("checkpointDirtyRatio", b -> b.checkpointDirtyRatio(0.9501)),
                arg("checkpointDirtyRatio", b -> b.checkpointDirtyRatio(Double.NaN)),
                arg("checkpointWalVolume", b -> b.checkpointWalVolume(MiB - 1)),
                arg("checkpointWalVolume", b -> b.checkpointWalVolume(TiB + 1)),
                arg("skippyLevels", b -> b.skippyLevels(-1)),
                arg("skippyLevels", b -> b.skippyLevels(9)),
                arg("skippyNodeEntries", b -> b.skippyNodeEntries(7)),
                arg("skippyNodeEntries", b -> b.skippyNodeEntries(65537)),
                arg("captureBufferSize", b -> b.captureBufferSize(256 * KiB - 4096)),
                arg("captureBufferSize", b -> b.captureBufferSize(16 * MiB + 1)),
                arg("archiveSegmentSize", b -> b.archiveSegmentSize(256 * KiB - 1)),
                arg("snapshotPageWindow", b -> b.snapshotPageWindow(-1)),
                arg("snapshotPageWindow", b -> b.snapshotPageWindow(1048577)),
                arg("snapshotDiffChain", b -> b.snapshotDiffChain(-1)),
                arg("snapshotDiffChain", b -> b.snapshotDiffChain(256)),
                arg("recoveryMode", b -> b.recoveryMode(null)),
                arg("recoveryCompression", b -> b.recoveryCompression(null)),
                arg("walSyncMode", b -> b.walSyncMode(null)),
                arg("retention", b -> b.retention(null)),
                arg("path", b -> b.path(null)),
                // cross-field
                arg("dataRegionSize", b -> b.pageSize(16384).dataRegionSize(32 * MiB - 16384)),
                arg("dataRegionSize", b -> b.dataRegionSize(8 * MiB + 1024)),
                arg("checkpointBufferSize", b -> b.checkpointBufferSize(256 * KiB + 1024)),
                arg("archivePath", b -> b.archivePath(DIR.resolve("x/.."))),
                // the working directory, as for path: the archive's files landed wherever the process was started
                arg("archivePath", b -> b.archivePath(Path.of(""))),
                arg("dataRegionSize", b -> b.partitions(505).dataRegionSize(8 * MiB)),
                arg("dataRegionSize", b -> b.partitions(1024).dataRegionSize(4127 * 4 * KiB)));
    }

    private static Arguments arg(String field, UnaryOperator<VarveConfig.Builder> change) {
        return Arguments.of(field, change);
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("inside")
    void justInsidePasses(String field, UnaryOperator<VarveConfig.Builder> change) {
        change.apply(base()).build();
    }

    @ParameterizedTest(name = "[{index}] {0}")
    @MethodSource("outside")
    void justOutsideFailsNamingTheField(String field, UnaryOperator<VarveConfig.Builder> change) {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> change.apply(base()).build());
        assertTrue(e.getMessage().startsWith(field + " "), e.getMessage());
    }

    @Test
    void tooFewPagesMessage() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> base().pageSize(16384).dataRegionSize(8 * MiB).build());
        assertEquals("dataRegionSize must hold at least 2048 pages of pageSize 16384 (32 MiB), was 8388608 bytes",
                e.getMessage());
    }

    /**
     * 1024 partitions and an 8 MiB region each passed, but together every store.table(name) was refused: creating a
     * table of 1024 partitions touches 2064 pages, more than the half of 2048 one change may take.
     */
    @Test
    void aRegionTooSmallForATableOfThePartitionsIsRefusedAtBuild() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> base().partitions(1024).dataRegionSize(8 * MiB).build());
        assertEquals("dataRegionSize must hold at least 4128 pages (16512 KiB at pageSize 4096) for a table of partitions 1024, "
                + "whose creation may take half the region, was 8388608 bytes", e.getMessage());
    }

    @Test
    void toBuilderCopiesEveryField() {
        VarveConfig a = base().pageSize(8192).dataRegionSize(64 * MiB).partitions(3)
                .recoveryMode(RecoveryMode.WAL_PHYSICAL).recoveryCompression(RecoveryCompression.SKIP_GARBAGE)
                .walSyncMode(WalSyncMode.FSYNC).walSegmentSize(8 * MiB).walFlushFrequency(Duration.ofMillis(5))
                .checkpointFrequency(Duration.ofMinutes(2)).checkpointThreads(7).recoveryThreads(3).checkpointBufferSize(MiB)
                .checkpointDirtyRatio(0.5).checkpointWalVolume(2 * GiB)
                .retention(RankTreePolicy.levels(Retention.keepLast(3), Retention.keepAll()).withBudget(GiB))
                .archivePath(Path.of("/arch")).build();
        VarveConfig b = a.toBuilder().build();
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertEquals(a.toString(), b.toString());
        VarveConfig c = a.toBuilder().recoveryMode(RecoveryMode.CHECKPOINT_RECOVERY_FILE).build();
        assertNotEquals(a, c);
        assertEquals(RecoveryMode.CHECKPOINT_RECOVERY_FILE, c.recoveryMode());
        assertEquals(RecoveryMode.WAL_PHYSICAL, a.recoveryMode());
    }

    @Test
    void defaultArchivePathFollowsPathThroughToBuilder() {
        VarveConfig a = base().build();
        VarveConfig b = a.toBuilder().path(Path.of("/other")).build();
        assertEquals(Path.of("/other/archive"), b.archivePath());
    }

    @Test
    void toStringListsEveryField() {
        String s = base().build().toString();
        for (String field : new String[] {"path=", "pageSize=4096", "dataRegionSize=268435456", "partitions=16",
                "recoveryMode=CHECKPOINT_RECOVERY_FILE", "recoveryCompression=SNAPPY", "walSyncMode=LOG_ONLY",
                "walSegmentSize=67108864", "walFlushFrequency=PT1S", "checkpointFrequency=PT30S",
                "checkpointThreads=2", "recoveryThreads=4", "checkpointBufferSize=67108864", "checkpointDirtyRatio=0.75",
                "checkpointWalVolume=1073741824", "skippyLevels=2", "skippyNodeEntries=4096", "captureBufferSize=16777216", "archiveSegmentSize=67108864",
                "snapshotPageWindow=64", "snapshotDiffChain=63", "retention=keepAll()", "archivePath="}) {
            assertTrue(s.contains(field), field + " missing in " + s);
        }
    }

    /** equals and hashCode go through toString: a setting left out of it would make configs that differ in it equal. */
    @Test
    void toStringNamesEverySetting() {
        String s = base().build().toString();
        for (java.lang.reflect.Field f : ConfigFields.class.getDeclaredFields()) {
            if (java.lang.reflect.Modifier.isStatic(f.getModifiers())) continue;
            assertTrue(s.contains(", " + f.getName() + "=") || s.startsWith("VarveConfig{" + f.getName() + "="), f.getName() + " missing in " + s);
        }
    }

    @Test
    void propertyNamesHaveThePrefixAndMatchTheFields() {
        assertEquals("varve.pageSize", ConfigLimits.PAGE_SIZE_PROP_NAME);
        assertEquals("varve.checkpointDirtyRatio", ConfigLimits.CHECKPOINT_DIRTY_RATIO_PROP_NAME);
        for (String key : ConfigProperties.KEYS) {
            assertTrue(key.startsWith(ConfigLimits.PREFIX), key);
        }
        assertEquals(ConfigProperties.KEYS.size(), ConfigProperties.KEYS.stream().distinct().count());
    }

    /** A key missing from the list still loads, but the unknown-key error would not name it among the known ones. */
    @Test
    void everyPropertyNameIsAKnownKey() throws IllegalAccessException {
        int names = 0;
        for (java.lang.reflect.Field f : ConfigLimits.class.getFields()) {
            if (!f.getName().endsWith("_PROP_NAME")) continue;
            names++;
            assertTrue(ConfigProperties.KEYS.contains((String) f.get(null)), f.getName() + " is not among ConfigProperties.KEYS");
        }
        assertEquals(names, ConfigProperties.KEYS.size());
    }

    @Test
    void nameDefaultsToTheAbsolutePathAndIsChecked() {
        VarveConfig a = VarveConfig.builder().path(Path.of("rel/store")).build();
        assertEquals(Path.of("rel/store").toAbsolutePath().normalize().toString(), a.name());
        VarveConfig b = a.toBuilder().name("orders-db").build();
        assertEquals("orders-db", b.name());
        assertEquals("orders-db", b.toBuilder().build().name());
        assertTrue(b.toString().contains("name=orders-db"), b.toString());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.toBuilder().name("").build());
        assertTrue(e.getMessage().contains("name must be 1..200 characters"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.toBuilder().name("a\nb").build());
        assertThrows(IllegalArgumentException.class, () -> a.toBuilder().name("x".repeat(201)).build());
        e = assertThrows(IllegalArgumentException.class, () -> a.toBuilder().name("a\uDC00").build());
        assertTrue(e.getMessage().contains("unpaired surrogates, was 'a\\uDC00'"), e.getMessage());
        assertEquals("a\uD83D\uDE00", a.toBuilder().name("a\uD83D\uDE00").build().name(), "a pair is a character like any other");
    }

    /** A store path holding what a given name may not (a newline, a tab) was its default name as it was. */
    @Test
    void theDefaultNameEscapesWhatAGivenNameMayNotHold() {
        VarveConfig c = VarveConfig.builder().path(Path.of("/tmp/a\nb\tc")).build();
        assertEquals("/tmp/a\\u000Ab\\u0009c", c.name());
        assertEquals(c.name(), c.toBuilder().name(c.name()).build().name(), "the default name is one a caller could give");
    }
}
