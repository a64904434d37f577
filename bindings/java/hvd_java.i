/*
 * Java (JNI) binding: the shared interface plus Java-only typemaps.
 *
 * Generated classes land in org.hvd.jni and are an implementation detail;
 * the public API is the hand-written org.hvd package on top of them.
 * Enums are mapped to plain int constants (enumtypeunsafe) so the status
 * codes can be compared and switched on without wrapper objects.
 */
%module HvdNative /* before hvd.i's %module: the first one wins */

%include "enumtypeunsafe.swg"
%javaconst(1);
%include "stdint.i"

/* Raw memory from a direct java.nio.ByteBuffer (zero-copy). A heap buffer is
 * refused here; null passes NULL so the C API reports its own error. */
%typemap(jni) void* DIRECT "jobject"
%typemap(jtype) void* DIRECT "java.nio.ByteBuffer"
%typemap(jstype) void* DIRECT "java.nio.ByteBuffer"
%typemap(javain) void* DIRECT "$javainput"
%typemap(in) void* DIRECT {
  $1 = $input ? (*jenv)->GetDirectBufferAddress(jenv, $input) : NULL;
  if ($input && !$1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIllegalArgumentException, "ByteBuffer is not direct");
    return $null;
  }
}

/* C arrays (inputs and outputs) as Java primitive arrays, copied back after
 * the call so that output parameters such as `hvd_handle* handle` work. */
%define HVDJ_ARRAY(CTYPE, JTYPE, JNAME)
%typemap(jni) CTYPE* ARRAY "j" #JTYPE "Array"
%typemap(jtype) CTYPE* ARRAY #JTYPE "[]"
%typemap(jstype) CTYPE* ARRAY #JTYPE "[]"
%typemap(javain) CTYPE* ARRAY "$javainput"
%typemap(in) CTYPE* ARRAY {
  $1 = $input ? (CTYPE*)(*jenv)->Get##JNAME##ArrayElements(jenv, $input, NULL) : NULL;
}
%typemap(argout) CTYPE* ARRAY {
  if ($input) (*jenv)->Release##JNAME##ArrayElements(jenv, $input, (void*)$1, 0);
}
%enddef
HVDJ_ARRAY(int64_t, long, Long)
HVDJ_ARRAY(int32_t, int, Int)
HVDJ_ARRAY(int, int, Int)

%apply void* DIRECT { void* scratch, void* input, void* output, void* data, void* dst };
%apply int64_t* ARRAY { int64_t* shape, int64_t* handle, int64_t* nbytes, hvd_handle* handle,
                        int64_t* lengths };
%apply int32_t* ARRAY { int32_t* splits, int32_t* ndim, int32_t* id, const int32_t* ranks };
%apply int* ARRAY { int* last_rank, int* count };

%include "../swig/hvd.i"

%{
#include "hvd_jni_glue.h"
%}
%include "hvd_jni_glue.h"
