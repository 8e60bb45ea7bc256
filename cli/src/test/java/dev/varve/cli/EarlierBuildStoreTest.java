package dev.varve.cli;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Stores of an earlier build against this one, with the real jar of that build in child JVMs (docs/on-disk-format.md,
 * "Format version policy"): what it wrote — closed, killed between checkpoints, killed in a checkpoint — opens here
 * with every acknowledged write and every snapshot; what this build wrote, alone or over the earlier build's files,
 * the earlier one refuses naming the file and the version, and no byte of the directory changes.
 *
 * <p>Long (it runs the kill -9 rounds of two builds for each recovery mode and walSyncMode), and it needs the earlier
 * build's shaded jar: {@code -Dvarve.earlierJar=/path/to/varve-cli.jar}, built from that commit, e.g.
 * {@code git worktree add /tmp/old 1bd714a && cd /tmp/old && mvn -B -o -Dmaven.repo.local=<a copy> install -DskipTests -pl cli -am}.
 * Without it the test is skipped.
 */
@Tag("long")
@Timeout(900)
class EarlierBuildStoreTest {
    private static final String EARLIER_JAR = System.getProperty("varve.earlierJar");
    /** How a build refuses a file of a format version it does not know. */
    private static final Pattern UNSUPPORTED_VERSION = Pattern.compile("CorruptionException: unsupported [^\\n]*version \\d+");

    @TempDir
    Path tmp;

    private enum Build { EARLIER, THIS }

    @ParameterizedTest
    @CsvSource({"WAL_PHYSICAL, FSYNC", "WAL_PHYSICAL, LOG_ONLY", "CHECKPOINT_RECOVERY_FILE, FSYNC", "CHECKPOINT_RECOVERY_FILE, LOG_ONLY"})
    void storesCrossBetweenTheBuildsAsThePolicySays(String mode, String sync) throws Exception {
        Assumptions.assumeTrue(EARLIER_JAR != null && Files.isRegularFile(Path.of(EARLIER_JAR)), "-Dvarve.earlierJar names no jar");
        // 1. written and closed by the earlier build: read, written, checkpointed and reopened here
        Path clean = tmp.resolve("clean");
        List<Path> logs = new ArrayList<>(List.of(write(Build.EARLIER, clean, mode, sync, 0, 3000, 1000, 200, "close")));
        check(clean, mode, sync, logs);
        logs.add(write(Build.THIS, clean, mode, sync, 3000, 3000, 1000, 200, "close"));
        check(clean, mode, sync, logs);
        refusedByTheEarlierBuild(clean, mode, sync); // this build's markers over the earlier build's page files

        // 2. the earlier build killed between checkpoints, then in a checkpoint (a large dirty set cut in its page writes)
        Path crashed = tmp.resolve("crashed");
        List<Path> crashLogs = new ArrayList<>(List.of(write(Build.EARLIER, crashed, mode, sync, 0, 2000, 500, 100, "close")));
        crashLogs.add(write(Build.EARLIER, crashed, mode, sync, 2000, 3000, 500, 200, "hang"));
        check(crashed, mode, sync, crashLogs);
        Path midCheckpoint = tmp.resolve("mid");
        List<Path> midLogs = new ArrayList<>(List.of(write(Build.EARLIER, midCheckpoint, mode, sync, 0, 2000, 500, 100, "close")));
        midLogs.add(write(Build.EARLIER, midCheckpoint, mode, sync, 2000, 8000, 4000, 3000, "mid"));
        check(midCheckpoint, mode, sync, midLogs);

        // 3. this build, over the earlier build's files, killed in a checkpoint: opens again here, refused there
        midLogs.add(write(Build.THIS, midCheckpoint, mode, sync, 20000, 8000, 4000, 3000, "mid"));
        refusedByTheEarlierBuild(midCheckpoint, mode, sync);
        check(midCheckpoint, mode, sync, midLogs);

        // 4. a store only this build wrote, killed in a checkpoint
        Path fresh = tmp.resolve("fresh");
        write(Build.THIS, fresh, mode, sync, 0, 8000, 4000, 3000, "mid");
        refusedByTheEarlierBuild(fresh, mode, sync);
    }

    /** The earlier build's open fails naming a file and a version, and every file is as it was, byte for byte. */
    private void refusedByTheEarlierBuild(Path store, String mode, String sync) throws Exception {
        Map<String, String> before = hashes(store);
        Path log = tmp.resolve("refused-" + System.nanoTime() + ".log");
        Process p = start(Build.EARLIER, log, "check", store.toString(), mode, sync);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the earlier build's open returns");
        String out = Files.readString(log);
        assertNotEquals(0, p.exitValue(), out);
        // whichever format moved on since that build: "unsupported checkpoint marker version 3 (this build reads 1 to 2)"
        assertTrue(UNSUPPORTED_VERSION.matcher(out).find() && out.contains("[file " + store), out);
        assertEquals(before, hashes(store), "the earlier build's refused open changed the store: " + out);
    }

    /** This build's open reads back every acknowledged write and snapshot the logs name. */
    private void check(Path store, String mode, String sync, List<Path> logs) throws Exception {
        List<String> args = new ArrayList<>(List.of("check", store.toString(), mode, sync));
        for (Path l : logs) args.add(l.toString());
        Path log = tmp.resolve("check-" + System.nanoTime() + ".log");
        Process p = start(Build.THIS, log, args.toArray(String[]::new));
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the check returns");
        assertEquals(0, p.exitValue(), Files.readString(log));
    }

    /** Runs a writer to its end: closed, or killed by SIGKILL once it hangs (after its puts, or in its checkpoint). */
    private Path write(Build build, Path store, String mode, String sync, long from, long count, int snapEvery, int valueBytes,
                       String end) throws Exception {
        Path log = tmp.resolve(build + "-" + from + "-" + end + "-" + System.nanoTime() + ".log");
        Process p = start(build, log, "write", store.toString(), mode, sync, Long.toString(from), Long.toString(count),
                Integer.toString(snapEvery), Integer.toString(valueBytes), end);
        if (end.equals("close")) {
            assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the writer closes");
            assertEquals(0, p.exitValue(), Files.readString(log));
            return log;
        }
        String awaited = end.equals("hang") ? "HANG" : "MID ";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (!Files.readString(log).contains(awaited)) {
            assertTrue(p.isAlive(), "the writer died: " + Files.readString(log));
            assertTrue(System.nanoTime() < deadline, "the writer never reached " + awaited);
            Thread.sleep(50);
        }
        p.destroyForcibly(); // SIGKILL
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return log;
    }

    private static Process start(Build build, Path log, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx512m",
                "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", classPath(build), CrossBuildDriver.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    /** This build's: the test's own class path. The earlier build's: its jar, then the driver's classes alone. */
    private static String classPath(Build build) {
        if (build == Build.THIS) return System.getProperty("java.class.path");
        try {
            return EARLIER_JAR + File.pathSeparator
                    + Path.of(CrossBuildDriver.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Every file under {@code dir} (directories too, as empty entries) by relative path, with its SHA-256. */
    private static Map<String, String> hashes(Path dir) throws IOException {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            s.forEach(p -> {
                try {
                    String key = dir.relativize(p).toString();
                    out.put(key, Files.isDirectory(p) ? "dir" : HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                } catch (NoSuchAlgorithmException e) {
                    throw new IllegalStateException(e);
                }
            });
        }
        return out;
    }
}
