package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Execution;
import org.junit.jupiter.api.parallel.ExecutionMode;

/** {@code --recovery-modes}: every configuration gets the same warm-up before the timed runs. */
@Timeout(300)
// beside the module's other classes (benchmarks/pom.xml): the run is a child JVM's, which shares no store, thread or
// figure with this JVM (CompareFiguresTest looks for store threads left in this one), and it checks no timing
@Execution(ExecutionMode.CONCURRENT)
class RecoveryModeComparisonTest {
    @Test
    void everyRecoverySetupIsWarmedUpBeforeAnyIsTimed(@TempDir Path tmp) throws Exception {
        // eight stores of the default 256 MiB region one after another: in a JVM of its own, whose direct memory the other
        // test classes' closed stores (freed only once their cleaners run) do not share. C1 only and the serial collector:
        // the runs are timed by the clock, so C2's compilations and G1's threads only added CPU, and no figure is checked
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(List.of(java, "-Xmx256m", "-XX:MaxDirectMemorySize=2g", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"),
                Main.class.getName(), "--recovery-modes", "--seconds", "1", "--dir", tmp.resolve("d").toString()))
                .redirectErrorStream(true).start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(Main.OK, p.exitValue(), text);
        // only RF/SNAPPY was warmed up: WAL_PHYSICAL, the first timed and the base of every ratio, compiled its page-image
        // path while it was timed
        String warmUp = text.lines().filter(l -> l.startsWith("warm-up")).findFirst().orElse("");
        for (RecoverySetup s : RecoverySetup.values()) assertTrue(warmUp.contains(s.label()), s.label() + " not warmed up: " + warmUp);
    }
}
