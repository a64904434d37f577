package org.hvd;

/**
 * Loads libhvd_jni once. {@code -Dhvd.jni.library=/abs/path/libhvd_jni.so}
 * wins (no java.library.path needed); otherwise the JVM searches
 * {@code java.library.path} for {@code hvd_jni}. libhvd_jni finds libhvd.so
 * through its RPATH or the system's library path.
 */
final class NativeLoader {
  static final String PROPERTY = "hvd.jni.library";
  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) return;
    String path = System.getProperty(PROPERTY);
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("hvd_jni");
    }
    loaded = true;
  }
}
