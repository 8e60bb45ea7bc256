package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleReader;
import java.lang.module.ResolvedModule;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The module descriptors export the public API and nothing else, and the API's signatures name no internal type.
 * Runs where the build runs the tests: on the module path (skipped when the engine is on the class path).
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ModuleBoundaryTest {
    private static final Set<String> INTERNAL_MODULES = Set.of("dev.varve.core", "dev.varve.checkpoint", "dev.varve.recovery",
            "dev.varve.snapshot");
    private static final Set<String> API_PACKAGES = Set.of("dev.varve.engine", "dev.varve.config", "dev.varve.core.io");

    private static ModuleDescriptor descriptor(String module) {
        return ModuleLayer.boot().findModule(module).orElseThrow(() -> new AssertionError(module + " is not in the boot layer"))
                .getDescriptor();
    }

    private static Set<String> unqualifiedExports(String module) {
        return descriptor(module).exports().stream().filter(e -> !e.isQualified()).map(ModuleDescriptor.Exports::source)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    @Test
    void onlyTheApiPackagesAreExportedToEveryone() {
        assumeTrue(Varve.class.getModule().isNamed(), "the engine runs on the class path");
        assertEquals(Set.of("dev.varve.engine"), unqualifiedExports("dev.varve.engine"));
        assertEquals(Set.of("dev.varve.config"), unqualifiedExports("dev.varve.config"));
        assertEquals(Set.of("dev.varve.core.io"), unqualifiedExports("dev.varve.core"));
        for (String m : INTERNAL_MODULES) {
            for (ModuleDescriptor.Exports e : descriptor(m).exports()) {
                if (!e.isQualified()) continue;
                assertTrue(e.targets().stream().allMatch(t -> t.startsWith("dev.varve.")), m + " exports " + e + " outside Varve");
            }
        }
        for (String m : List.of("dev.varve.checkpoint", "dev.varve.recovery", "dev.varve.snapshot")) {
            assertEquals(Set.of(), unqualifiedExports(m), m + " exports to everyone");
        }
    }

    @Test
    void publicSignaturesOfTheApiNameOnlyApiTypes() throws IOException, ClassNotFoundException {
        assumeTrue(Varve.class.getModule().isNamed(), "the engine runs on the class path");
        ResolvedModule engine = ModuleLayer.boot().configuration().findModule("dev.varve.engine").orElseThrow();
        List<String> leaks = new ArrayList<>();
        try (ModuleReader reader = engine.reference().open()) {
            for (String entry : reader.list().filter(n -> n.startsWith("dev/varve/engine/") && n.endsWith(".class")).toList()) {
                Class<?> c = Class.forName(entry.substring(0, entry.length() - ".class".length()).replace('/', '.'));
                if (!Modifier.isPublic(c.getModifiers())) continue;
                for (Method m : c.getMethods()) {
                    if (m.getDeclaringClass().getModule() != Varve.class.getModule()) continue;
                    check(m.getGenericReturnType(), c.getSimpleName() + "." + m.getName(), leaks);
                    for (Type p : m.getGenericParameterTypes()) check(p, c.getSimpleName() + "." + m.getName(), leaks);
                }
            }
        }
        assertEquals(List.of(), leaks, "public API methods that name internal types");
    }

    private static void check(Type t, String where, List<String> leaks) {
        if (t instanceof ParameterizedType p) {
            check(p.getRawType(), where, leaks);
            for (Type a : p.getActualTypeArguments()) check(a, where, leaks);
        } else if (t instanceof Class<?> c) {
            while (c.isArray()) c = c.getComponentType();
            String pkg = c.getPackageName();
            if (pkg.startsWith("dev.varve.") && !API_PACKAGES.contains(pkg)) leaks.add(where + " names " + c.getName());
        }
    }
}
