package dev.varve.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dashboard draws /api/series against the samples' times and divides by their differences for its rates: a wall
 * clock stepped back an hour (NTP) or forward a day (a VM resumed) between two samples must not reorder or stretch
 * them. Each sample is a second after the one before on the monotonic clock here, whatever the wall clock does.
 */
@Timeout(60)
class MetricsSamplerClockTest {
    @TempDir
    Path dir;

    @Test
    void samplesFollowTheMonotonicClockWhenTheWallClockSteps() {
        long start = 1_767_225_600_000L; // 2026-01-01T00:00:00Z
        long[] wall = {start};
        long[] nanos = {42};
        VarveConfig config = VarveConfig.builder().path(dir).dataRegionSize(8L << 20).build();
        ServerOptions options = new ServerOptions().sampleInterval(Duration.ofHours(1)); // only the samples taken by hand
        try (Varve store = Varve.open(config);
             MetricsSampler sampler = new MetricsSampler(store, options, () -> wall[0], () -> nanos[0])) { // samples once at start
            wall[0] = start - Duration.ofHours(1).toMillis() + 1_000;
            nanos[0] += Duration.ofSeconds(1).toNanos();
            sampler.sample();
            wall[0] = start + Duration.ofDays(1).toMillis() + 2_000;
            nanos[0] += Duration.ofSeconds(1).toNanos();
            sampler.sample();
            List<Long> times = sampler.samples().stream().map(MetricsSampler.Sample::millis).toList();
            assertEquals(List.of(start, start + 1_000, start + 2_000), times);
        }
    }
}
