package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Fast smoke tests of the jar's entry point; no benchmark runs here. */
@Timeout(180)
class MainTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    void demoWritesReopensAndVerifiesEveryKey(@TempDir Path tmp) {
        Path dir = tmp.resolve("store");
        assertEquals(Main.OK, run("--demo", "--dir", dir.toString(), "--keys", "3000", "--mode", "WAL_PHYSICAL", "--sync", "BACKGROUND"), err::toString);
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("verified 3,000 keys: OK"), text);
        assertTrue(text.contains("gets") || text.contains("get "), text);
    }

    @Test
    void demoWipesItsOwnDirectoryOnTheNextRun(@TempDir Path tmp) {
        Path dir = tmp.resolve("store");
        assertEquals(Main.OK, run("--demo", "--dir", dir.toString(), "--keys", "500"), err::toString);
        assertEquals(Main.OK, run("--dir", dir.toString(), "--keys", "200", "--demo"), err::toString);
    }

    @Test
    void refusesToWipeADirectoryItDidNotMake(@TempDir Path tmp) throws IOException {
        Files.writeString(tmp.resolve("notes.txt"), "mine");
        assertEquals(Main.FAILED, run("--demo", "--dir", tmp.toString(), "--keys", "10"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("refusing to wipe"), err::toString);
        assertTrue(Files.exists(tmp.resolve("notes.txt")));
    }

    @Test
    void badFlagsPrintUsage() {
        assertEquals(Main.USAGE, run("--keys", "many"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--keys needs a whole number"), err::toString);
        assertEquals(Main.USAGE, run("--mode", "PHYSICAL"));
        assertEquals(Main.USAGE, run("--recovery-modes", "--recovery-time"));
        assertEquals(Main.USAGE, run("--compare", "--demo"));
        assertEquals(Main.USAGE, run("--compare", "--rate", "0"));
    }

    @Test
    void helpPrintsUsage() {
        assertEquals(Main.OK, run("--help"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--recovery-modes"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("--compare"));
    }

    @Test
    void compareIsTheDefaultJobAndLongWidensIt() throws Exception {
        Options d = Options.parse(java.util.List.of());
        assertEquals(Options.Job.COMPARE, d.job);
        CompareJob j = new CompareJob(d, System.out);
        assertEquals(java.util.List.of(ComparePhase.DEFAULT), j.phases());
        assertEquals(java.util.List.of(dev.varve.config.WalSyncMode.LOG_ONLY), j.syncModes());
        assertEquals(Options.COMPARE_SECONDS_DEFAULT, j.settings(dev.varve.config.WalSyncMode.LOG_ONLY).seconds());
        Options l = Options.parse(java.util.List.of("--compare", "--long"));
        CompareJob lj = new CompareJob(l, System.out);
        assertEquals(ComparePhase.values().length, lj.phases().size());
        assertEquals(2, lj.syncModes().size());
        CompareSettings s = lj.settings(dev.varve.config.WalSyncMode.FSYNC);
        assertEquals(s, CompareSettings.fromArgs(s.toArgs()));
        assertEquals(Options.COMPARE_WARMUP_SECONDS_DEFAULT, j.settings(dev.varve.config.WalSyncMode.LOG_ONLY).warmupSeconds());
        assertEquals(Options.COMPARE_WARMUP_SECONDS_LONG, s.warmupSeconds());
        CompareJob none = new CompareJob(Options.parse(java.util.List.of("--compare", "--long", "--warmup-seconds", "0")), System.out);
        assertEquals(0, none.settings(dev.varve.config.WalSyncMode.FSYNC).warmupSeconds());
        assertEquals(" --long --warmup-seconds 0", none.flags());
    }

    @Test
    void phasesAndSystemsAreSelectable() throws Exception {
        Options o = Options.parse(java.util.List.of("--compare", "--phases", "writers,fsync-writers-8,writers_2", "--systems", "varve_rf_snappy,rocksdb"));
        CompareJob j = new CompareJob(o, System.out);
        assertEquals(java.util.List.of(ComparePhase.WRITERS_1, ComparePhase.WRITERS_2, ComparePhase.WRITERS_4, ComparePhase.WRITERS_8,
                ComparePhase.FSYNC_WRITERS_8), j.phases());
        assertEquals(java.util.List.of(CompareSetup.VARVE_RF_SNAPPY, CompareSetup.ROCKSDB), j.setups());
        assertEquals(4, CompareSetup.parse("varve").size());
        assertEquals(8, ComparePhase.FSYNC_WRITERS_8.writers(1));
        assertEquals(3, ComparePhase.FULL_SPEED.writers(3));
        assertEquals(Main.USAGE, run("--compare", "--phases", "warp"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown phase 'warp'"), err::toString);
        assertEquals(Main.USAGE, run("--compare", "--systems", "oracle"));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown system 'oracle'"), err::toString);
    }

    @Test
    void aPhaseOrSystemListThatNamesNothingIsRejected() {
        // "," split is no word at all: the run would start child JVMs with no phase (each crashing) or measure no system
        assertEquals(Main.USAGE, run("--compare", "--phases", ","));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--phases: names no phase"), err::toString);
        assertEquals(Main.USAGE, run("--compare", "--systems", ","));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--systems: names no system"), err::toString);
    }

    @Test
    void reportAndChartsAreWrittenAndWellFormed(@TempDir Path tmp) throws Exception {
        CompareSettings s = new CompareSettings(4, 2, 1000, 100, 10, 1, 256L << 20, 64L << 20, 1000, 4096, 16,
                dev.varve.config.WalSyncMode.LOG_ONLY);
        java.util.List<PhaseResult> rs = new java.util.ArrayList<>();
        for (CompareSetup setup : CompareSetup.values()) {
            java.util.Map<String, Long> v = new java.util.LinkedHashMap<>();
            v.put("ops", 1000L);
            v.put("nanos", 1_000_000_000L);
            v.put("p50", 2000L);
            v.put("p99", 9000L);
            v.put("walBytes", 250_000L);
            if (setup.kind != CompareSetup.Kind.H2) v.put("checkpoints", 2L);
            java.util.List<long[]> series = java.util.List.of(new long[] {0, 0, 0, 0}, new long[] {250, 250, 10, 40}, new long[] {500, 600, -1, 80});
            rs.add(setup == CompareSetup.IGNITE_RECOVERY_DATA
                    ? new PhaseResult(setup, ComparePhase.FULL_SPEED, s.sync(), java.util.Map.of(), java.util.List.of(), "", "boom <&>")
                    : new PhaseResult(setup, ComparePhase.FULL_SPEED, s.sync(), v, series, setup.label + " config", null));
        }
        MachineInfo m = MachineInfo.probe(tmp);
        CompareReport r = new CompareReport(s, java.util.List.of(ComparePhase.FULL_SPEED), java.util.List.of(CompareSetup.values()),
                java.util.Map.of(s.sync(), rs), m,
                CompareJob.childJvmFlags(), "", 0.1);
        Path md = r.write(tmp);
        String text = Files.readString(md);
        assertTrue(text.contains("| full-speed puts, puts/s | 1,000 |"), text);
        assertTrue(text.contains("boom"), text);
        assertTrue(text.contains("1.00x"), text);
        // bytes on disk count files made at full size up front (Varve's 64 MiB WAL segment after 20,000 puts: 3,525 bytes a put
        // against RocksDB's 232): divided by the puts of a short phase that is no per-put cost, and the notes must say so
        assertTrue(text.contains("preallocates at full size"), text);
        javax.xml.parsers.DocumentBuilderFactory f = javax.xml.parsers.DocumentBuilderFactory.newInstance();
        int svgs = 0;
        try (var files = Files.list(tmp)) {
            for (Path p : files.filter(p -> p.toString().endsWith(".svg")).toList()) {
                f.newDocumentBuilder().parse(p.toFile());
                svgs++;
            }
        }
        assertEquals(3, svgs);
        r.printConsole(new PrintStream(out, true, StandardCharsets.UTF_8));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("Varve RF/SNAPPY"));
    }
}
