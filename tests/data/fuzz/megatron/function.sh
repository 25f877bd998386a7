f() { :; }
( cd x )
