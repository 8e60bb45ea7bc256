package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code --recovery-modes}: every configuration gets the same warm-up before the timed runs. */
@Timeout(300)
class RecoveryModeComparisonTest {
    @Test
    void everyRecoverySetupIsWarmedUpBeforeAnyIsTimed(@TempDir Path tmp) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(new String[] {"--recovery-modes", "--seconds", "1", "--dir", tmp.resolve("d").toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(Main.OK, code, text + err);
        // only RF/SNAPPY was warmed up: WAL_PHYSICAL, the first timed and the base of every ratio, compiled its page-image
        // path while it was timed
        String warmUp = text.lines().filter(l -> l.startsWith("warm-up")).findFirst().orElse("");
        for (RecoverySetup s : RecoverySetup.values()) assertTrue(warmUp.contains(s.label()), s.label() + " not warmed up: " + warmUp);
    }
}
