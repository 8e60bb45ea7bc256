package dev.varve.engine;

import dev.varve.config.RecoveryMode;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Destroyed partitions stay destroyed after a crash, and what was written after a destroy stays: a child JVM fills,
 * destroys and refills partitions with checkpoints and snapshots at random moments and is killed with kill -9 once
 * it has acknowledged all of it; the reopened store must hold exactly that, partition by partition. (A grid's store
 * destroys the segments it gives up and may own them again later: a destroy that came back after a crash would
 * serve data the grid moved elsewhere.)
 */
@Timeout(300)
class PartitionDestroyCrashTest {
    @TempDir
    Path tmp;

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void destroyedPartitionsStayDestroyedAfterKillNine(RecoveryMode mode) throws Exception {
        for (long seed = 1; seed <= Long.getLong("varve.destroySeeds", 3); seed++) {
            Path dir = tmp.resolve(mode + "-" + seed);
            killOnceAcknowledged(dir, mode, seed);
            TreeMap<String, String>[] model = FixtureDestroyCrash.model(seed);
            try (Varve store = Varve.open(FixtureSupport.small(dir).recoveryMode(mode).partitions(1).build())) {
                Table t = store.table("grid", FixtureDestroyCrash.CALLER);
                for (int p = 0; p < FixtureDestroyCrash.PARTS; p++) {
                    TreeMap<String, String> got = new TreeMap<>();
                    try (Cursor c = t.partition(p).scan(null, null)) {
                        while (c.next()) got.put(new String(c.key(), StandardCharsets.UTF_8), new String(c.value(), StandardCharsets.UTF_8));
                    }
                    TreeMap<String, String> acked = model[p];
                    if (!acked.equals(got)) {
                        String firstDifference = Stream.concat(acked.keySet().stream(), got.keySet().stream())
                                .filter(k -> !Objects.equals(acked.get(k), got.get(k))).sorted().findFirst().orElseThrow();
                        fail(mode + " seed " + seed + ": partition " + p + " after kill -9 holds " + got.size() + " keys, acknowledged "
                                + acked.size() + "; first difference at key " + firstDifference);
                    }
                }
            }
        }
    }

    /** Runs the fixture in a child JVM and kills it with kill -9 as soon as it reports everything acknowledged. */
    private void killOnceAcknowledged(Path dir, RecoveryMode mode, long seed) throws IOException, InterruptedException {
        Path log = tmp.resolve(mode + "-" + seed + ".log");
        List<String> command = FixtureChildJvm.java("-Xmx256m");
        command.addAll(List.of("-cp", FixtureChildJvm.classPath(), FixtureDestroyCrash.class.getName(), dir.toString(), mode.name(), Long.toString(seed)));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            while (child.isAlive() && !Files.readString(log).contains("ACKED")) Thread.sleep(20);
            assertTrue(child.isAlive(), "the child died before acknowledging everything:\n" + Files.readString(log));
        } finally {
            child.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
    }
}
