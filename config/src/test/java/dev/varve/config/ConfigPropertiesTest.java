package dev.varve.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Timeout(180)
class ConfigPropertiesTest {

    private static final long MiB = 1L << 20;
    private static final long GiB = 1L << 30;

    @TempDir
    Path dir;

    private Path write(String... lines) throws IOException {
        Path f = dir.resolve("varve.properties");
        Files.write(f, java.util.List.of(lines), StandardCharsets.UTF_8);
        return f;
    }

    private VarveConfig load(String... lines) throws IOException {
        return VarveConfig.load(write(lines));
    }

    private IllegalArgumentException fails(String... lines) throws IOException {
        Path f = write(lines);
        return assertThrows(IllegalArgumentException.class, () -> VarveConfig.load(f));
    }

    @Test
    void everyFieldRoundTrips() throws IOException {
        VarveConfig c = load(
                "# comment",
                "varve.path=/data/varve",
                "varve.pageSize=8k",
                "varve.dataRegionSize=512M",
                "varve.partitions=32",
                "varve.recoveryMode=wal_physical",
                "varve.recoveryCompression=Skip_Garbage",
                "varve.walSyncMode=BACKGROUND",
                "varve.walSegmentSize=16m",
                "varve.walFlushFrequency=150ms",
                "varve.checkpointFrequency=PT2M",
                "varve.checkpointThreads=4",
                "varve.recoveryThreads=2",
                "varve.checkpointBufferSize=1g",
                "varve.checkpointDirtyRatio=0.5",
                "varve.checkpointWalVolume=2G",
                "varve.retention=keepLast(60), keepFor(PT24H), keepAll()",
                "varve.retentionBudget=1t",
                "varve.archivePath=/archive/varve",
                "varve.skippyLevels=0",
                "varve.skippyNodeEntries=8",
                "varve.captureBufferSize=64m",
                "varve.archiveSegmentSize=256k",
                "varve.snapshotPageWindow=0",
                "varve.snapshotDiffChain=255",
                "varve.name= orders db ",
                "other.key=ignored",
                "varveapp.mode=ignored too");
        VarveConfig expected = VarveConfig.builder().path(Path.of("/data/varve")).pageSize(8192)
                .dataRegionSize(512 * MiB).partitions(32).recoveryMode(RecoveryMode.WAL_PHYSICAL)
                .recoveryCompression(RecoveryCompression.SKIP_GARBAGE).walSyncMode(WalSyncMode.BACKGROUND)
                .walSegmentSize(16 * MiB).walFlushFrequency(Duration.ofMillis(150))
                .checkpointFrequency(Duration.ofMinutes(2)).checkpointThreads(4).recoveryThreads(2).checkpointBufferSize(GiB)
                .checkpointDirtyRatio(0.5).checkpointWalVolume(2 * GiB)
                .retention(RankTreePolicy.levels(Retention.keepLast(60), Retention.keepFor(Duration.ofHours(24)),
                        Retention.keepAll()).withBudget(1L << 40))
                .archivePath(Path.of("/archive/varve")).skippyLevels(0).skippyNodeEntries(8).captureBufferSize(64 * MiB)
                .archiveSegmentSize(256 << 10).snapshotPageWindow(0).snapshotDiffChain(255).name("orders db").build();
        assertEquals(expected, c);
        assertEquals(expected.toString(), c.toString(), "every setting the builder has, the file can set");
        assertEquals(Path.of("/archive/varve"), c.archivePath());
    }

    @Test
    void onlyPathGivesDefaults() throws IOException {
        VarveConfig c = load("varve.path=/data/varve");
        assertEquals(VarveConfig.builder().path(Path.of("/data/varve")).build(), c);
    }

    @Test
    void aStorePathGivenByTheCallerNeedsNoneInTheFileAndWins() throws IOException {
        Path store = Path.of("/data/given");
        VarveConfig c = VarveConfig.load(write("varve.partitions=8"), store);
        assertEquals(VarveConfig.builder().path(store).partitions(8).build(), c);
        assertEquals(store.resolve("archive"), c.archivePath());
        assertEquals(store, VarveConfig.load(write("varve.path=/data/other"), store).path());
        Path f = write("varve.partitions=8");
        assertThrows(IllegalArgumentException.class, () -> VarveConfig.load(f, null));
        assertThrows(IllegalArgumentException.class, () -> VarveConfig.load(f), "without a path in the file or from the caller");
    }

    @Test
    void relativePathsResolveAgainstTheFilesDirectory() throws IOException {
        VarveConfig c = load("varve.path=store", "varve.archivePath=../arch");
        assertEquals(dir.toAbsolutePath().resolve("store"), c.path());
        assertEquals(dir.toAbsolutePath().getParent().resolve("arch"), c.archivePath());
        assertEquals(dir.toAbsolutePath().resolve("store").resolve("archive"),
                load("varve.path=./store").archivePath());
    }

    @ParameterizedTest
    @CsvSource({"4096, 4096", "64k, 65536", "64K, 65536", "64m, 67108864", "1G, 1073741824",
            "1t, 1099511627776", "' 8 m ', 8388608"})
    void sizes(String text, long bytes) throws IOException {
        assertEquals(bytes, load("varve.path=/d", "varve.retentionBudget=" + text).retention().budgetBytes().getAsLong());
    }

    @ParameterizedTest
    @CsvSource({"PT30S, 30000", "pt1m, 60000", "P1D, 86400000", "150ms, 150", "30s, 30000", "2m, 120000",
            "3h, 10800000", "1d, 86400000", "1MS, 1"})
    void durations(String text, long millis) throws IOException {
        assertEquals(Duration.ofMillis(millis),
                load("varve.path=/d", "varve.checkpointFrequency=" + text).checkpointFrequency());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "varve.pageSize=4x | varve.pageSize | '4x'",
            "varve.pageSize=4g | varve.pageSize | '4g'",
            "varve.dataRegionSize=-1 | varve.dataRegionSize | '-1'",
            "varve.dataRegionSize=99999999t | varve.dataRegionSize | '99999999t'",
            "varve.walSegmentSize=1.5m | varve.walSegmentSize | '1.5m'",
            "varve.walFlushFrequency=10 | varve.walFlushFrequency | '10'",
            "varve.walFlushFrequency=10 sec | varve.walFlushFrequency | '10 sec'",
            "varve.checkpointFrequency=PTxS | varve.checkpointFrequency | 'PTxS'",
            "varve.partitions=many | varve.partitions | 'many'",
            "varve.checkpointThreads=2.0 | varve.checkpointThreads | '2.0'",
            "varve.checkpointDirtyRatio=half | varve.checkpointDirtyRatio | 'half'",
            "varve.recoveryMode=WAL | varve.recoveryMode | 'WAL'",
            "varve.recoveryCompression=lz4 | varve.recoveryCompression | 'lz4'",
            "varve.walSyncMode=sync | varve.walSyncMode | 'sync'",
            "varve.retention=keepLast(0) | varve.retention | 'keepLast(0)'",
            "varve.retention=keepSome() | varve.retention | 'keepSome()'",
            "varve.retentionBudget=0 | varve.retentionBudget | '0'",
            "varve.archivePath= | varve.archivePath | ''"})
    void unparsableValueNamesKeyAndText(String line, String key, String text) throws IOException {
        IllegalArgumentException e = fails("varve.path=/d", line);
        assertTrue(e.getMessage().contains(key), e.getMessage());
        assertTrue(e.getMessage().contains(text), e.getMessage());
        assertTrue(e.getMessage().contains("expected"), e.getMessage());
    }

    @Test
    void badEnumListsAllowedValues() throws IOException {
        IllegalArgumentException e = fails("varve.path=/d", "varve.walSyncMode=sometimes");
        assertTrue(e.getMessage().contains("varve.walSyncMode"), e.getMessage());
        assertTrue(e.getMessage().contains("[FSYNC, LOG_ONLY, BACKGROUND]"), e.getMessage());
    }

    @Test
    void unknownKeyIsRejected() throws IOException {
        IllegalArgumentException e = fails("varve.path=/d", "varve.pagesize=8192");
        assertTrue(e.getMessage().contains("unknown key varve.pagesize"), e.getMessage());
        assertTrue(e.getMessage().contains("did you mean varve.pageSize?"), e.getMessage());
        e = fails("varve.path=/d", "varve.walBufferSize=1m");
        assertTrue(e.getMessage().contains("unknown key varve.walBufferSize"), e.getMessage());
    }

    /**
     * A file saved with a byte-order mark (as some Windows editors do) began with the key "\uFEFFvarve.…": without the
     * prefix, so it was ignored and the store ran with that setting's default (here the other recovery mode).
     */
    @Test
    void aByteOrderMarkDoesNotHideTheFirstKey() throws IOException {
        Path f = dir.resolve("bom.properties");
        Files.write(f, ("\uFEFFvarve.recoveryMode=WAL_PHYSICAL\nvarve.path=/d\n").getBytes(StandardCharsets.UTF_8));
        assertEquals(RecoveryMode.WAL_PHYSICAL, VarveConfig.load(f).recoveryMode());
    }

    /** "Varve.pageSize" was not a varve.* key, so it was ignored in silence: the store got the default page size. */
    @Test
    void aKeyWhosePrefixDiffersOnlyInCaseIsRejected() throws IOException {
        IllegalArgumentException e = fails("varve.path=/d", "Varve.recoveryMode=WAL_PHYSICAL");
        assertTrue(e.getMessage().contains("unknown key Varve.recoveryMode"), e.getMessage());
        assertTrue(e.getMessage().contains("did you mean varve.recoveryMode?"), e.getMessage());
        e = fails("varve.path=/d", "VARVE.PAGESIZE=8192");
        assertTrue(e.getMessage().contains("did you mean varve.pageSize?"), e.getMessage());
        assertEquals(Path.of("/d"), load("varve.path=/d", "varveapp.mode=1", "my.varve.pageSize=1", "pageSize=1", "valve.pressure=2", "var.path=/x").path(),
                "other keys stay ignored");
    }

    /**
     * A misspelt prefix ("varv.pageSize", "varve_pageSize") or a bare "varve" key was ignored in silence as well,
     * running the store with the default in its place.
     */
    @Test
    void aKeyWithAMisspeltPrefixIsRejectedNamingTheKeyMeant() throws IOException {
        for (String typo : new String[]{"varv.pageSize", "varve_pageSize", "vrave.pageSize", "varve-pageSize", "varvepageSize", "Varv.PageSize"}) {
            IllegalArgumentException e = fails("varve.path=/d", typo + "=8192");
            assertTrue(e.getMessage().contains("unknown key " + typo + " (did you mean varve.pageSize?)"), e.getMessage());
        }
        assertTrue(fails("varve.path=/d", "varve=1").getMessage().contains("unknown key varve;"));
        assertTrue(fails("varve.path=/d", "varve_whatever=1").getMessage().contains("unknown key varve_whatever;"));
    }

    @Test
    void aKeySetTwiceIsRejectedNotTheLastOneTaken() throws IOException {
        IllegalArgumentException e = fails("varve.path=/d", "varve.pageSize=8192", "varve.pageSize=4096");
        assertTrue(e.getMessage().contains("varve.pageSize is set twice"), e.getMessage());
        assertTrue(e.getMessage().contains("varve.properties"), e.getMessage());
    }

    @Test
    void validationErrorsNameTheFieldAndFile() throws IOException {
        IllegalArgumentException e = fails("varve.path=/d", "varve.pageSize=3000");
        assertTrue(e.getMessage().contains("pageSize must be a power of two in [1024, 16384], was 3000"),
                e.getMessage());
        assertTrue(e.getMessage().contains("varve.properties"), e.getMessage());
        e = fails("varve.pageSize=4096");
        assertTrue(e.getMessage().contains("path is required"), e.getMessage());
    }

    @Test
    void budgetWithoutLevelsAppliesToKeepEverything() throws IOException {
        VarveConfig c = load("varve.path=/d", "varve.retentionBudget=10g");
        assertEquals(RankTreePolicy.keepEverything().withBudget(10 * GiB), c.retention());
    }

    @Test
    void unreadableFileNamesTheFile() {
        Path missing = dir.resolve("missing.properties");
        UncheckedIOException e = assertThrows(UncheckedIOException.class, () -> VarveConfig.load(missing));
        assertTrue(e.getMessage().contains(missing.toString()), e.getMessage());
        UncheckedIOException d = assertThrows(UncheckedIOException.class, () -> VarveConfig.load(dir));
        assertTrue(d.getMessage().contains(dir.toString()), d.getMessage());
    }

    @Test
    void parseSizeAndDurationDirectly() {
        assertEquals(5L << 40, ConfigProperties.parseSize("5T"));
        assertThrows(IllegalArgumentException.class, () -> ConfigProperties.parseSize("9223372036854775807k"));
        assertThrows(IllegalArgumentException.class, () -> ConfigProperties.parseSize("99999999999999999999"));
        assertEquals(Duration.ofDays(7), ConfigProperties.parseDuration("7d"));
        assertThrows(IllegalArgumentException.class, () -> ConfigProperties.parseDuration("999999999999999999d"));
        assertThrows(IllegalArgumentException.class, () -> ConfigProperties.parseDuration(""));
    }
}
